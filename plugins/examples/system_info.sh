#!/bin/sh
# system_info: uptime, load averages, memory and the disk usage of each path given, as one
# JSON object on stdout. Linux only: reads /proc/uptime, /proc/loadavg and /proc/meminfo,
# and runs `df -Pk` (POSIX output, 1024-byte blocks) once per path.
#
#   system_info.sh [--] [PATH …]
#
# A leading "--" is skipped (the manifest passes one so that no path can read as an option).
# On any failure it says why on stderr and exits 1, printing nothing on stdout.
set -u

# The C locale: decimal points, df's header and byte-wise awk, whatever the caller's LANG.
LC_ALL=C
export LC_ALL

die() {
	printf 'system_info: %s\n' "$*" >&2
	exit 1
}

if [ "${1-}" = "--" ]; then
	shift
fi

for f in /proc/uptime /proc/loadavg /proc/meminfo; do
	[ -r "$f" ] || die "cannot read $f (this tool needs Linux /proc)"
done

# JSON string escaping for what comes from outside (the paths, df's output): backslash, quote
# and control characters. Done character by character because sub/gsub treat "\\" in
# replacements differently in gawk, mawk and busybox awk.
AWK_JSON='
function json(s,    out, i, c, n) {
	out = ""
	n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (c == "\\") out = out "\\\\"
		else if (c == "\"") out = out "\\\""
		else if (c == "\n") out = out "\\n"
		else if (c == "\t") out = out "\\t"
		else if (c == "\r") out = out "\\r"
		else if (c in CTRL) out = out sprintf("\\u%04x", CTRL[c])
		else out = out c
	}
	return "\"" out "\""
}
BEGIN { for (i = 1; i < 32; i++) CTRL[sprintf("%c", i)] = i }
'

uptime=$(awk '$1 ~ /^[0-9]+(\.[0-9]+)?$/ { print $1; exit }' /proc/uptime)
[ -n "$uptime" ] || die "unexpected format of /proc/uptime"

load=$(awk '
	$1 ~ /^[0-9]+\.[0-9]+$/ && $2 ~ /^[0-9]+\.[0-9]+$/ && $3 ~ /^[0-9]+\.[0-9]+$/ {
		printf "{\"1m\":%s,\"5m\":%s,\"15m\":%s}", $1, $2, $3
		exit
	}' /proc/loadavg)
[ -n "$load" ] || die "unexpected format of /proc/loadavg"

# MemAvailable exists since Linux 3.14. Byte counts print with %.0f, not %d: mawk's %d
# stops at 2^31.
memory=$(awk '
	$1 == "MemTotal:" && $3 == "kB" { total = $2 }
	$1 == "MemAvailable:" && $3 == "kB" { avail = $2 }
	END {
		if (total == "" || avail == "") exit 1
		printf "{\"total_bytes\":%.0f,\"available_bytes\":%.0f}", total * 1024, avail * 1024
	}' /proc/meminfo) || die "no MemTotal or MemAvailable in /proc/meminfo (Linux 3.14 or newer is needed)"

disks=""
for path in "$@"; do
	# df's own message (no such file …) goes to stderr, followed by ours.
	out=$(df -Pk -- "$path") || die "df -Pk failed for $path"
	# Line 2: Filesystem 1024-blocks Used Available Capacity Mounted-on. The file system name
	# and the mount point may contain spaces, so split around the four numbers and the
	# percentage rather than by field number.
	disk=$(printf '%s\n' "$out" | P="$path" awk "$AWK_JSON"'
		NR == 2 {
			if (!match($0, / +[0-9]+ +[0-9]+ +[0-9]+ +([0-9]+%|-) +\//)) exit 1
			fs = substr($0, 1, RSTART - 1)
			mount = substr($0, RSTART + RLENGTH - 1)
			split(substr($0, RSTART, RLENGTH - 1), n, " ")
			printf "{\"path\":%s,\"mount_point\":%s,\"filesystem\":%s,", json(ENVIRON["P"]), json(mount), json(fs)
			printf "\"total_bytes\":%.0f,\"used_bytes\":%.0f,\"available_bytes\":%.0f}", n[1] * 1024, n[2] * 1024, n[3] * 1024
			found = 1
		}
		END { if (!found) exit 1 }') || die "cannot parse the output of df -Pk for $path"
	disks="${disks:+$disks,}$disk"
done

printf '{"uptime_seconds":%s,"load_average":%s,"memory":%s,"disks":[%s]}\n' \
	"$uptime" "$load" "$memory" "$disks"
