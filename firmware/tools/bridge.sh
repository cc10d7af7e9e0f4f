#!/bin/sh
# Stand-in for the robot's transparent Wi-Fi serial bridge: expose the firmware's UART
# (a pty from simavr_runner or snake_fw_posix) on a TCP or UDP port with socat.
#   tools/bridge.sh tcp|udp PORT PTY [BIND_ADDRESS (default 127.0.0.1)]
# TCP accepts one client after another; UDP answers the peer of the first datagram.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 tcp|udp PORT PTY [BIND_ADDRESS]" >&2; exit 2; }
proto=$1 port=$2 pty=$3 bind=${4:-127.0.0.1}
case $proto in
tcp) exec socat "TCP-LISTEN:$port,bind=$bind,reuseaddr,fork,nodelay" "FILE:$pty,raw,echo=0" ;;
udp) exec socat "UDP-LISTEN:$port,bind=$bind,reuseaddr" "FILE:$pty,raw,echo=0" ;;
*) echo "$0: protocol must be tcp or udp" >&2; exit 2 ;;
esac
