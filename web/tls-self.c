/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "tls-self.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_EXTENSION *, X509_EXTENSION_free)

static int add_ext(X509 *x, int nid, const char *value) {
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        _cleanup_(X509_EXTENSION_freep) X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        if (!e || !X509_add_ext(x, e, -1))
                return -EINVAL;
        return 0;
}

/* The PEM text of a BIO, for write_file_atomic. */
static int bio_text(BIO *b, char **ret, size_t *ret_len) {
        char *p = NULL;
        long n = BIO_get_mem_data(b, &p);
        if (n <= 0)
                return -EIO;
        *ret = p;
        *ret_len = (size_t) n;
        return 0;
}

static int chown_like_parent(const char *path) {
        char buf[PATH_MAX];
        struct stat st;
        snprintf(buf, sizeof(buf), "%s", path);
        if (geteuid() != 0 || stat(dirname(buf), &st) < 0)
                return 0;
        return chown(path, st.st_uid, st.st_gid) < 0 ? negative_errno() : 0;
}

int tls_self_signed(const char *cert_path, const char *key_path, const char *hostname, int days, bool replace,
                    bool *ret_made, SeatError **ret_error) {
        if (!replace && access(cert_path, F_OK) == 0 && access(key_path, F_OK) == 0) {
                *ret_made = false;
                return 0;
        }
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = EVP_EC_gen("P-256");
        _cleanup_(X509_freep) X509 *x = X509_new();
        if (!key || !x)
                return seat_error_set(ret_error, ENOMEM, "cannot make a P-256 key");
        uint8_t serial[16];
        randombytes_buf(serial, sizeof(serial));
        serial[0] &= 0x7f; /* positive */
        BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
        if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))) {
                BN_free(bn);
                return seat_error_set(ret_error, ENOMEM, "cannot set the certificate's serial");
        }
        BN_free(bn);
        X509_set_version(x, 2);
        X509_gmtime_adj(X509_getm_notBefore(x), -3600);
        X509_gmtime_adj(X509_getm_notAfter(x), (long) days * 86400);
        X509_set_pubkey(x, key);
        X509_NAME *name = X509_get_subject_name(x);
        char cn[64];
        snprintf(cn, sizeof(cn), "seat-web %.40s", hostname);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *) cn, -1, -1, 0);
        X509_set_issuer_name(x, name);
        char san[256];
        snprintf(san, sizeof(san), "DNS:%.63s,DNS:localhost,IP:127.0.0.1,IP:::1", hostname);
        if (add_ext(x, NID_subject_alt_name, san) < 0 || add_ext(x, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
            add_ext(x, NID_key_usage, "critical,digitalSignature") < 0 || add_ext(x, NID_ext_key_usage, "serverAuth") < 0)
                return seat_error_set(ret_error, EINVAL, "cannot add extensions for host '%s'", hostname);
        if (!X509_sign(x, key, EVP_sha256()))
                return seat_error_set(ret_error, EIO, "cannot sign the certificate");

        _cleanup_(BIO_freep) BIO *kb = BIO_new(BIO_s_mem()), *cb = BIO_new(BIO_s_mem());
        char *ktext, *ctext;
        size_t klen, clen;
        if (!kb || !cb || !PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) || !PEM_write_bio_X509(cb, x) ||
            bio_text(kb, &ktext, &klen) < 0 || bio_text(cb, &ctext, &clen) < 0)
                return seat_error_set(ret_error, EIO, "cannot encode the key and certificate");
        /* The key first: a certificate never stands without the key it names. */
        int r = write_file_atomic(key_path, ktext, klen, 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write '%s': %s", key_path, strerror(-r));
        r = write_file_atomic(cert_path, ctext, clen, 0644);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write '%s': %s", cert_path, strerror(-r));
        if ((r = chown_like_parent(key_path)) < 0 || (r = chown_like_parent(cert_path)) < 0)
                return seat_error_set(ret_error, -r, "cannot give '%s' to the owner of its directory: %s", key_path,
                                      strerror(-r));
        *ret_made = true;
        return 0;
}

int tls_fingerprint_file(const char *cert_path, TlsFingerprint *ret, SeatError **ret_error) {
        _cleanup_free_ char *pem = NULL;
        size_t len;
        int r = read_file_capped(cert_path, 1024 * 1024, &pem, &len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read certificate '%s': %s", cert_path, strerror(-r));
        _cleanup_(BIO_freep) BIO *b = BIO_new_mem_buf(pem, (int) len);
        _cleanup_(X509_freep) X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
        if (!x)
                return seat_error_set(ret_error, EBADMSG, "'%s' holds no PEM certificate", cert_path);
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (!X509_digest(x, EVP_sha256(), md, &n) || n != 32)
                return seat_error_set(ret_error, EIO, "cannot hash '%s'", cert_path);
        for (unsigned i = 0; i < n; i++)
                snprintf(ret->sha256 + 3 * i, 4, i + 1 < n ? "%02X:" : "%02X", md[i]);
        unsigned char *der = NULL;
        int dlen = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der);
        if (dlen <= 0)
                return seat_error_set(ret_error, EIO, "cannot encode the public key of '%s'", cert_path);
        unsigned char spki[32];
        crypto_hash_sha256(spki, der, (unsigned long long) dlen);
        OPENSSL_free(der);
        sodium_bin2base64(ret->spki_sha256, sizeof(ret->spki_sha256), spki, sizeof(spki), sodium_base64_VARIANT_ORIGINAL);
        return 0;
}
