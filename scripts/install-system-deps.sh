#!/bin/sh
# Install the Debian packages l3ha's tests use, when running as root with apt-get.
# Without root (or apt-get) it says so; the tests that need them then skip with a reason.
set -eu
PACKAGES="keepalived etcd-server iproute2 chromium prometheus openvswitch-switch rabbitmq-server mariadb-server iptables conntrack iputils-arping iputils-ping sudo dnsmasq-base ovn-central ovn-host"
missing=""
for pkg in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "note: not installing$missing (needs root and apt-get); tests that need them will skip" >&2
    exit 0
fi
echo "installing Debian packages:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
