#!/usr/bin/env bash
# timeout: 60
# share/systemd: the periodic host-profile service and timer are valid
# units, keep secrets in a mode-0600 EnvironmentFile and stay hardened.
. "$(dirname "$0")/lib.sh"
S=$FK_SRC/share/systemd/flamekit-host-profile.service
TM=$FK_SRC/share/systemd/flamekit-host-profile.timer
check_grep "service reads secrets from an EnvironmentFile" '^EnvironmentFile=/etc/flamekit/upload.env$' "$S"
check_grep "service refuses a group/world-readable EnvironmentFile" "find /etc/flamekit/upload.env -perm /077" "$S"
check_nogrep "no secret in the unit itself" '^Environment=.*(SECRET|KEY)' "$S"
check_grep "service captures 60 s of the host and uploads" '^ExecStart=flamekit host --duration 60 .*--upload \$\{FLAMEKIT_UPLOAD_URL\}$' "$S"
for k in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=read-only PrivateDevices=yes CapabilityBoundingSet=CAP_PERFMON; do
    check_grep "service hardening $k" "^$k" "$S"
done
check_nogrep "service does not hide processes from the profiler" '^(ProtectProc=invisible|ProcSubset=pid|PrivatePIDs)' "$S"
check_grep "timer runs hourly" '^OnCalendar=hourly$' "$TM"
verify_units "systemd-analyze verify service + timer" "$FK_SRC/share/systemd" "$FLAMEKIT"
