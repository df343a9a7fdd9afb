/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "sockaddr.h"

int sockaddr_from_ip(const char *ip, uint16_t port, struct sockaddr_storage *ret, socklen_t *ret_len) {
        struct sockaddr_in *in4 = (struct sockaddr_in *) ret;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ret;

        memset(ret, 0, sizeof(*ret));
        if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons(port);
                *ret_len = sizeof(*in4);
                return 0;
        }
        if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
                *ret_len = sizeof(*in6);
                return 0;
        }
        return -EINVAL;
}
