#!/bin/sh
# The victim: nginx serving a tiny web app and an SSH server with a deliberately weak,
# documented test password (webadmin / sunshine: see ../README.md). A training target only.
set -e
id webadmin >/dev/null 2>&1 || useradd -m -s /bin/bash webadmin
echo 'webadmin:sunshine' | chpasswd
mkdir -p /run/sshd /var/log/range
cp /range/www/index.html /var/www/html/index.html
/usr/sbin/sshd -E /var/log/range/sshd.log -o PasswordAuthentication=yes -o MaxStartups=30
exec nginx -g 'daemon off; error_log /var/log/range/nginx-error.log;' 
