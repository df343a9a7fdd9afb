/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <qrencode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/macro.h"
#include "fac-handout.h"

#define QUIET 4

int fac_qr_svg(const char *text, char **ret) {
        QRcode *q = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
        if (!q)
                return errno ? -errno : -EINVAL;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f) {
                QRcode_free(q);
                return -ENOMEM;
        }
        int size = q->width + 2 * QUIET;
        fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"qr\" viewBox=\"0 0 %d %d\" "
                   "shape-rendering=\"crispEdges\"><rect width=\"%d\" height=\"%d\" fill=\"#fff\"/><path fill=\"#000\" d=\"",
                size, size, size, size);
        /* One run of dark modules per path segment: a few KiB for a link's code. */
        for (int y = 0; y < q->width; y++)
                for (int x = 0; x < q->width;) {
                        if (!(q->data[y * q->width + x] & 1)) {
                                x++;
                                continue;
                        }
                        int run = 0;
                        while (x + run < q->width && (q->data[y * q->width + x + run] & 1))
                                run++;
                        fprintf(f, "M%d %dh%dv1h-%dz", x + QUIET, y + QUIET, run, run);
                        x += run;
                }
        fputs("\"/></svg>", f);
        QRcode_free(q);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

static void html(FILE *f, const char *s) {
        for (; *s; s++)
                switch (*s) {
                case '<': fputs("&lt;", f); break;
                case '>': fputs("&gt;", f); break;
                case '&': fputs("&amp;", f); break;
                case '"': fputs("&quot;", f); break;
                case '\'': fputs("&#39;", f); break;
                default: fputc(*s, f);
                }
}

/* (numbers only: nothing here to escape; no script, so the page's own refresh) */
int fac_handout_progress_render(size_t done, size_t total, char **ret, size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f,
                "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta http-equiv=\"refresh\" content=\"2\"><title>Seat handout: %zu of %zu seats</title>"
                "<link rel=\"stylesheet\" href=\"/facilitator/static/dashboard.css\"></head>\n"
                "<body class=\"handout\"><p class=\"noprint\"><a href=\"/facilitator/\">Back to the dashboard</a></p>\n"
                "<h1>Provisioning the seats</h1>\n"
                "<p class=\"handout-progress\" data-done=\"%zu\" data-total=\"%zu\"><progress value=\"%zu\" max=\"%zu\">"
                "</progress> %zu of %zu seats made</p>\n"
                "<p>One after the other: each boots. This page reloads itself and becomes the handout "
                "(the links to print) once every seat is made. Leaving it stops nothing.</p>\n"
                "</body></html>\n",
                done, total, done, total, done, total, done, total);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

int fac_handout_render(const HandoutEntry *e, size_t n, char **ret, size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Seat handout</title>"
              "<link rel=\"stylesheet\" href=\"/facilitator/static/dashboard.css\"></head>\n"
              "<body class=\"handout\"><p class=\"noprint\"><a href=\"/facilitator/\">Back to the dashboard</a> &middot; "
              "print this page (each link works once)</p>\n",
              f);
        for (size_t i = 0; i < n; i++) {
                fputs("<section class=\"card\" data-participant=\"", f);
                html(f, e[i].participant);
                fputs("\"><h2>", f);
                html(f, e[i].participant);
                fputs("</h2>", f);
                if (!e[i].url[0]) {
                        fputs("<p class=\"warn\">No seat: ", f);
                        html(f, e[i].problem);
                        fputs("</p></section>\n", f);
                        continue;
                }
                _cleanup_free_ char *svg = NULL;
                if (fac_qr_svg(e[i].url, &svg) == 0)
                        fputs(svg, f);
                fputs("<p>Seat <code class=\"seat\">", f);
                html(f, e[i].seat);
                fputs("</code></p><p>Open once: <a class=\"link\" href=\"", f);
                html(f, e[i].url);
                fputs("\">", f);
                html(f, e[i].url);
                fputs("</a></p></section>\n", f);
        }
        fputs("</body></html>\n", f);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}
