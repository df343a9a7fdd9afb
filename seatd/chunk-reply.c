/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One bounded piece of a file seatd keeps (a console log, an audit log, a sealed archive),
 * as a control reply: clients page through it by offset, so no reply is larger than
 * max_bytes (base64) however big the file grows. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/macro.h"
#include "methods.h"

int request_reply_file_chunk(Request *req, const char *path, int64_t offset, size_t max_bytes) {
        struct stat st = {};
        ssize_t n = 0;
        /* O_NOFOLLOW and a regular file only: the directories are seatd's, but a guest's
         * name never picks the path, and a symlink planted there must not be read through. */
        _cleanup_close_ int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) : -ENOENT;
        _cleanup_free_ uint8_t *buf = malloc(max_bytes ? max_bytes : 1);
        _cleanup_free_ char *b64 = NULL;
        if (!buf)
                return -ENOMEM;
        if (fd >= 0 && fstat(fd, &st) >= 0 && S_ISREG(st.st_mode)) {
                n = pread(fd, buf, max_bytes, offset);
                if (n < 0)
                        n = 0;
        } else
                st.st_size = 0;
        if (base64_encode(buf, (size_t) n, &b64, NULL) < 0)
                return -ENOMEM;
        json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "data", json_object_new_string(b64));
        json_object_object_add(o, "offset", json_object_new_int64(offset + n));
        json_object_object_add(o, "size", json_object_new_int64((int64_t) st.st_size));
        json_object_object_add(o, "eof", json_object_new_boolean(offset + n >= (int64_t) st.st_size));
        return request_reply_result(req, o);
}
