/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "fac-parse.h"

int fac_form_get(const char *body, size_t len, const char *key, char *out, size_t out_size) {
        return web_form_field(body, len, key, out, out_size, true);
}

int fac_csrf_get(const char *header, size_t len, char out[FAC_CSRF_LEN + 1]) {
        size_t a = 0, b = len;
        if (len > 256)
                return -EBADMSG;
        while (a < b && (header[a] == ' ' || header[a] == '\t'))
                a++;
        while (b > a && (header[b - 1] == ' ' || header[b - 1] == '\t'))
                b--;
        if (b - a != FAC_CSRF_LEN)
                return -EBADMSG;
        memcpy(out, header + a, FAC_CSRF_LEN);
        out[FAC_CSRF_LEN] = '\0';
        if (!web_session_id_valid(out)) {
                out[0] = '\0';
                return -EBADMSG;
        }
        return 0;
}

bool fac_participant_valid(const char *s) {
        size_t n = strlen(s);
        return n > 0 && n <= FAC_PARTICIPANT_MAX && s[0] != ' ' && s[n - 1] != ' ' &&
               strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._+- ") == n;
}

int fac_names_parse(const char *text, size_t len, char names[][FAC_PARTICIPANT_MAX + 1], size_t *ret_n) {
        const char *p = text, *end = text + len;
        size_t n = 0;
        if (len > WEB_FORM_MAX)
                return -EBADMSG;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *a = p, *b = nl ? nl : end;
                p = nl ? nl + 1 : end;
                while (a < b && (*a == ' ' || *a == '\t' || *a == '\r'))
                        a++;
                while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
                        b--;
                if (a == b)
                        continue;
                if (n >= FAC_HANDOUT_MAX)
                        return -E2BIG;
                if ((size_t) (b - a) > FAC_PARTICIPANT_MAX)
                        return -EBADMSG;
                memcpy(names[n], a, (size_t) (b - a));
                names[n][b - a] = '\0';
                if (!fac_participant_valid(names[n]))
                        return -EBADMSG;
                for (size_t i = 0; i < n; i++)
                        if (!strcmp(names[i], names[n]))
                                return -EBADMSG;
                n++;
        }
        *ret_n = n;
        return 0;
}

static void strip_tokens(json_object *o, int depth) {
        if (!o || depth > 4)
                return;
        if (json_object_is_type(o, json_type_object)) {
                json_object_object_del(o, "token");
                json_object_object_foreach(o, k, v) {
                        (void) k;
                        strip_tokens(v, depth + 1);
                }
        } else if (json_object_is_type(o, json_type_array))
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        strip_tokens(json_object_array_get_idx(o, i), depth + 1);
}

void fac_strip_tokens(json_object *o) {
        strip_tokens(o, 0);
}
