# An example egress profile: what a seat's guest may reach. Copy it to
# /etc/seatd/egress/NAME.profile and provision with "seatctl provision --egress NAME".
# Everything not allowed here is dropped and counted (seatctl status SEAT). Whatever a
# profile says, seats never reach the host, other seats, loopback, link-local and the
# metadata service (169.254.0.0/16), multicast and broadcast.
#
# A profile that allows anything needs "uplink" in /etc/seatd/seatd.conf: without it
# seatd refuses to provision with this profile. Syntax: seatd.conf(5), "EGRESS
# PROFILES", and /usr/share/doc/seat-manager/egress.md. The addresses below are
# documentation ranges (RFC 5737): put your own.

# A resolver (udp and tcp port 53), up to four.
dns 198.51.100.53

# HTTPS to one network, a web service on one host, a range of UDP ports, and ping.
allow tcp 203.0.113.0/24 port 443
allow tcp 198.51.100.10 port 8080
allow udp 198.51.100.0/24 port 5000-5010
allow icmp 203.0.113.0/24

# The defaults, written out.
dhcp off
capture off
ipv6 deny
