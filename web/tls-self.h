/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The self-signed certificate of `seat-web --self-signed`, and the fingerprints a
 * facilitator shows the room so that participants can check what their browser sees. */

#include <stdbool.h>

#include "common/error.h"

#define TLS_FPR_HEX_LEN (32 * 3)   /* "AB:CD:…" with its NUL */
#define TLS_SPKI_B64_LEN 45        /* base64 of 32 bytes with its NUL */

typedef struct TlsFingerprint {
        char sha256[TLS_FPR_HEX_LEN];  /* of the certificate (DER), as openssl x509 -fingerprint -sha256 prints it */
        char spki_sha256[TLS_SPKI_B64_LEN]; /* of its public key (SubjectPublicKeyInfo), base64: a pin */
} TlsFingerprint;

/* Make a P-256 key and a certificate for hostname (and localhost, 127.0.0.1, ::1), valid
 * for days, at cert_path and key_path (0600), atomically; both files take the owner of
 * their directory when made by root. An existing pair is kept unless replace. */
int tls_self_signed(const char *cert_path, const char *key_path, const char *hostname, int days, bool replace,
                    bool *ret_made, SeatError **ret_error);
/* The fingerprints of the certificate in a PEM file. */
int tls_fingerprint_file(const char *cert_path, TlsFingerprint *ret, SeatError **ret_error);
