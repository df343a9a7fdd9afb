/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image_manifest_parse(): the evidence paths an image may name (absolute and plain: no
 * empty, "." or ".." component anywhere, the last one too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/seat-test.h"

#include "common/macro.h"
#include "images/manifest.h"
#include "unit-source.h"

/* The fuzz corpus's test image manifest, with its one evidence path "/root" replaced. */
static int parse_with_path(const char *path) {
        _cleanup_free_ char *text = unit_read_source("tests/fuzz/corpus/fuzz-image-manifest/test-image.json");
        if (!text)
                skip();
        char *at = strstr(text, "\"/root\"");
        assert_non_null(at);
        _cleanup_free_ char *json = NULL;
        assert_true(asprintf(&json, "%.*s\"%s\"%s", (int) (at - text), text, path, at + strlen("\"/root\"")) > 0);
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        SeatError *err = NULL;
        int r = image_manifest_parse(json, strlen(json), &m, &err);
        if (r < 0) {
                assert_non_null(strstr(err->message, "must be absolute and plain"));
                seat_error_free(err);
        }
        return r;
}

TEST(evidence_paths) {
        static const char *const good[] = { "/root", "/var/log", "/var/lib/docker/containers", "/var/log/", "/a..b", "/.x" };
        static const char *const bad[] = { "root", "/", "/..", "/.", "/root/..", "/root/.", "/root/../etc", "/root//x",
                                           "/root/./x", "//root", "" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (parse_with_path(good[i]) < 0)
                        fail_msg("'%s' refused", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_with_path(bad[i]) >= 0)
                        fail_msg("'%s' accepted", bad[i]);
}

TEST_MAIN("image-manifest")
