/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One audit log line from outside (evidence/audit.c): parse, and check a MAC with a fixed
 * key. Every rejection must carry a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const uint8_t key[AUDIT_KEY_BYTES] = { 1, 2, 3 };
        _cleanup_error_ SeatError *e = NULL;
        AuditRecord rec;
        int r = audit_record_parse((const char *) data, size, &rec, &e);
        if (r < 0) {
                if (!e || !e->message || e->code != -r)
                        abort();
                return 0;
        }
        if (e || rec.body_len >= size || !rec.data)
                abort();
        uint8_t mac[AUDIT_MAC_BYTES];
        if (audit_record_mac(key, rec.seq, rec.prev, (const char *) data, rec.body_len, mac) < 0)
                abort();
        audit_record_done(&rec);
        return 0;
}
