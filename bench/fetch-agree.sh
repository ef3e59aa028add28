#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Do fetch-bench invocations agree? The issue's target: two invocations of
# the default bench agree within 10 % on every ratio's median.
#
#   fetch-agree.sh [-t PCT] [-v] SWEEP SWEEP [SWEEP...]
#
# A SWEEP is a fetch-bench output directory (its report.json), or a
# directory of such directories: a sweep taken in pieces (e.g. -S 4M and
# -S 32M separately) counts as one. For each gRPC/socket ratio, and for the
# main per-setting figures, prints how many settings have medians within
# PCT % (default 10) across all the sweeps: largest / smallest - 1 <= PCT.
# -v lists every setting's medians and spread. Exit status 0 when every
# ratio agrees, 1 when one does not, 2 on bad input.
#
# gRPC's CPU per GiB moves with how often its server's threads hand work to
# each other (context switches per GiB), and that rate differs between
# invocations. So it also prints the gRPC server's CPU per switch (the
# slope over all the sweeps' gRPC runs, each setting centred, with its
# correlation), how well each setting's switches/GiB agree, and the server
# CPU ratio with each gRPC run priced at its setting's median switches/GiB
# over the sweeps: what the ratio would be had the threads switched alike
# (not part of the exit status). Likewise for the socket server by the
# machine's interrupts per GiB, which its CPU per fetch follows: its CPU
# per interrupt for each cache state, each setting's interrupts/GiB, the
# ratios with each socket run priced at its setting's median over the
# sweeps, with both servers priced, and fetch-bench's own priced ratios
# (each socket run at its own sweep's median; not part of it either).
#
# fetch-bench calls a run slow against a low percentile of its own sweep's
# probes, which a host slow for the whole sweep passes: the sweeps' probe
# references are printed, and a sweep whose reference is over 115 % of the
# lowest is named (its CPU figures and ratios are not comparable). So is a
# sweep whose host was slow for most of it: its runs' probes' median over
# 115 % of its own reference (fetch-bench's host_slow_most_of_sweep; most
# runs began on a slow host and its medians are mostly over every round).
# So is a sweep where other work shared the benchmark's CPUs, which the
# probes do not see (crowded runs kept, or the clients' CPUs busy beyond
# the clients over 25 % of the time at the median).
set -eu
pct=10 verbose=false
while getopts t:v o; do
    case $o in
    t) pct=$OPTARG ;;
    v) verbose=true ;;
    *) echo "usage: fetch-agree.sh [-t PCT] [-v] SWEEP SWEEP [SWEEP...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "fetch-agree.sh: give at least two sweeps (fetch-bench output directories)" >&2; exit 2; }
command -v jq >/dev/null || { echo "fetch-agree.sh: jq is needed (apt-get install jq)" >&2; exit 2; }

# One JSON array per sweep: the report.json files of its pieces.
sweeps=
for d in "$@"; do
    files=$(ls "$d/report.json" "$d"/*/report.json 2>/dev/null || true)
    [ -n "$files" ] || { echo "fetch-agree.sh: $d: no report.json in it or in its subdirectories (not a fetch-bench output?)" >&2; exit 2; }
    # shellcheck disable=SC2086 # one file name per line, no blanks (ls output of our own directories)
    # Settings are named by repository: the bytes of one fetch differ by a
    # few between invocations (git's progress lines).
    one=$(jq -s -c 'map((.repositories | map({ key: (.fetch_bytes | tostring),
                                               value: (.repository | split("/") | last) }) | from_entries) as $r
                        | .ratios |= map(. + { repo: $r[.fetch_bytes | tostring] })
                        | .settings |= map(. + { repo: $r[.fetch_bytes | tostring] }))' $files) || { echo "fetch-agree.sh: $d: a report.json is not JSON" >&2; exit 2; }
    sweeps="$sweeps$one
"
done

printf '%s' "$sweeps" | jq -r -s --argjson pct "$pct" --argjson verbose "$verbose" --argjson names "$(jq -n -c '$ARGS.positional' --args "$@")" '
    def rkey: "\(.repo) \(if .cache then "cache" else "no cache" end) \(.clients) \(.grpc_mode)";
    def skey: "\(.repo) \(if .cache then "cache" else "no cache" end) \(.clients) \(.server)";
    def r3: . * 1000 | round / 1000;
    def agrees: (max == min) or (min > 0 and (max / min - 1) * 100 <= $pct);
    def med: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                    else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    # rows: [{key, vals: [median per sweep]}] for metric m of items chosen by f
    def table(items; key; m):
        [ to_entries[] | .key as $i | [.value | items | select(m != null) | { k: key, i: $i, v: m }]
          | unique_by(.k)[] ]     # a setting twice in one sweep (overlapping pieces): its first
        | group_by(.k) | map({ key: .[0].k, vals: (sort_by(.i) | map(.v)), n: length });
    def report(title; rows; $nsweeps):
        (rows | map(select(.n == $nsweeps))) as $r
        | ($r | map(select(.vals | agrees)) | length) as $ok
        | "\(title): \($ok) of \($r | length) within \($pct) %"
          + (if ($r | length) < (rows | length) then " (\((rows | length) - ($r | length)) not in every sweep)" else "" end),
          (if $verbose then
              $r[] | "    \(.key): \(.vals | map(r3 | tostring) | join(" "))  spread \(if (.vals | min) > 0 then ((.vals | max) / (.vals | min) - 1) * 100 | round | tostring + " %" else "-" end)"
           else empty end);
    # Switch-normalised: gRPC server CPU per GiB moves with its context
    # switches per GiB (fetch-bench(1)), which differ between invocations.
    # k, the CPU per switch, is the slope of server CPU/GiB on switches/GiB
    # over the gRPC runs of all the sweeps, each setting centred on its own
    # means (so settings that differ in both do not make it); each gRPC run
    # is then priced at its setting'"'"'s median switches/GiB over the sweeps
    # (the median of the sweeps'"'"' medians) instead of its own, and the
    # ratio to the socket run of its round taken again.
    def gib: .bytes / 1073741824;
    def runs_xy: [.runs[] | select(.bytes > 0)
                  | { x: (.server_context_switches / gib), y: (.server_cpu_s / gib), slow: .host_slow,
                      crowded: (.crowded // false) }];
    # of runs ({slow, crowded, ...}), those a median is over, as
    # fetch-bench takes them: the ones not slow when at least 3 (or all)
    # are so, else the ones not crowded when at least 3 are so, else all
    def used: [.[] | select(.slow | not)] as $ok | [.[] | select(.crowded | not)] as $uc
        | if ($ok | length) >= 3 or ($ok | length) == length then $ok elif ($uc | length) >= 3 then $uc else . end;
    # the rounds of a ratio of two settings: those where neither run was slow
    # (or crowded, as above)
    def used_rounds($a; $b): [range($a | length) | { i: ., slow: ($a[.].slow or $b[.].slow),
                                                    crowded: ($a[.].crowded or $b[.].crowded) }] | used | map(.i);
    length as $nsweeps | . as $top
    | ([.[] | [.[] | .settings[]? | select(.server != "sock") | { k: skey, xy: runs_xy }]
        | unique_by(.k)[]] | group_by(.k)     # a setting twice in one sweep: once
       | map([.[].xy[]] | used | select(length >= 2)
             | (map(.x) | add / length) as $mx | (map(.y) | add / length) as $my
             | map({ dx: (.x - $mx), dy: (.y - $my) }))
       | add // []) as $d
    | ([$d[] | .dx * .dx] | add // 0) as $sxx | ([$d[] | .dy * .dy] | add // 0) as $syy
    | ([$d[] | .dx * .dy] | add // 0) as $sxy
    | (if $sxx > 0 then $sxy / $sxx else 0 end) as $kps
    | (if $sxx > 0 and $syy > 0 then $sxy / ($sxx * $syy | sqrt) else 0 end) as $kr
    | ([to_entries[] | .key as $i | .value[] | .settings[]? | select(.server != "sock")
        | { k: skey, i: $i, m: (runs_xy | map(.x) | med) }] | unique_by([.k, .i])
       | group_by(.k) | map({ key: .[0].k, value: (map(.m) | med) }) | from_entries) as $xref
    # The same for the socket server by the machine'"'"'s interrupts per GiB
    # (its CPU per fetch follows them, fetch-bench(1)): the slope over the
    # sweeps'"'"' socket runs of one cache state, each setting centred; each
    # socket run priced at its setting'"'"'s median interrupts/GiB over the
    # sweeps. (Sweeps from before fetch-bench counted interrupts: not priced.)
    | def runs_ix: [.runs[] | select(.bytes > 0 and (.interrupts | type) == "number")
                    | { x: (.interrupts / gib), y: (.server_cpu_s / gib), slow: .host_slow,
                        crowded: (.crowded // false) }];
    ([false, true] | map(. as $c
        | [$top[] | [.[] | .settings[]? | select(.server == "sock" and .cache == $c) | { k: skey, xy: runs_ix }]
           | unique_by(.k)[]] | group_by(.k)
        | map([.[].xy[]] | used | select(length >= 2)
              | (map(.x) | add / length) as $mx | (map(.y) | add / length) as $my
              | map({ dx: (.x - $mx), dy: (.y - $my) }))
        | add // []
        | ([.[] | .dx * .dx] | add // 0) as $xx | ([.[] | .dy * .dy] | add // 0) as $yy | ([.[] | .dx * .dy] | add // 0) as $xy
        | { k: (if $xx > 0 then $xy / $xx else 0 end), r: (if $xx > 0 and $yy > 0 then $xy / ($xx * $yy | sqrt) else 0 end),
            n: length })) as $ks
    | ([to_entries[] | .key as $i | .value[] | .settings[]? | select(.server == "sock")
        | { k: skey, i: $i, m: (runs_ix | map(.x) | med) }] | unique_by([.k, .i]) | map(select(.m != null))
       | group_by(.k) | map({ key: .[0].k, value: (map(.m) | med) }) | from_entries) as $ixref
    | def sock_priced($s; $sk; $c): if ($ks[if $c then 1 else 0 end].k > 0) and $ixref[$sk] != null
                                  then $s.y - $ks[if $c then 1 else 0 end].k * ($s.x - $ixref[$sk]) else null end;
    map(. as $sw | [$sw[] | .settings[]?] as $set | [$sw[] | .ratios[]? | . as $r
          | ($set | map(select(.repo == $r.repo and .cache == $r.cache and .clients == $r.clients))) as $p
          | ($p | map(select(.server == "sock")) | first | runs_xy) as $s
          | ($p | map(select(.server == $r.grpc_mode)) | first) as $g
          | select($s != null and $g != null)
          | ($g | runs_xy) as $gx | ($g | skey) as $gk
          | { repo: $r.repo, cache: $r.cache, clients: $r.clients, grpc_mode: $r.grpc_mode,
              norm: [used_rounds($gx; $s)[] | ($gx[.].y + $kps * ($xref[$gk] - $gx[.].x)) / $s[.].y] | med,
              switches: ($gx | map(.x) | med) }
            + (($p | map(select(.server == "sock")) | first) as $ss | ($ss | runs_ix) as $si | ($ss | skey) as $sk
               | if ($si | length) != ($s | length) then {}
                 else { sock_norm: ([used_rounds($gx; $s)[] | sock_priced($si[.]; $sk; $r.cache) as $q
                                     | if $q == null or $q <= 0 then null else $gx[.].y / $q end] | if any(. == null) then null else med end),
                        both_norm: ([used_rounds($gx; $s)[] | sock_priced($si[.]; $sk; $r.cache) as $q
                                     | if $q == null or $q <= 0 then null else ($gx[.].y + $kps * ($xref[$gk] - $gx[.].x)) / $q end]
                                    | if any(. == null) then null else med end),
                        interrupts: ($si | map(.x) | med) } end)]) as $norm
    | map([.[] | .ratios[]?]) as $ratios
    | map([.[] | .settings[]?]) as $settings
    | ($ratios[0] | length) as $nr
    | if $nr == 0 then error("no gRPC/socket ratios in the first sweep") else . end
    | "ratios, gRPC against socket (\($nsweeps) sweeps):",
      report("  server CPU/GiB gRPC/socket"; $ratios | table(.[]; rkey; .server_cpu_per_gib_grpc_over_sock.median); $nsweeps),
      report("  throughput if CPU-bound socket/gRPC"; $ratios | table(.[]; rkey; .cpu_bound_throughput_sock_over_grpc.median); $nsweeps),
      report("  throughput (wall clock) socket/gRPC"; $ratios | table(.[]; rkey; .throughput_sock_over_grpc.median); $nsweeps),
      report("  allocated bytes/GiB gRPC/socket"; $ratios | table(.[]; rkey; .alloc_bytes_per_gib_grpc_over_sock.median); $nsweeps),
      report("  server + clients CPU/GiB gRPC/socket"; $ratios | table(.[]; rkey; .server_client_cpu_per_gib_grpc_over_sock.median); $nsweeps),
      "  gRPC server CPU per context switch: \($kps * 1e6 * 10 | round / 10) us (r = \($kr * 100 | round / 100), \($d | length) runs, each setting centred)",
      report("  gRPC server switches/GiB"; $norm | table(.[]; rkey; .switches); $nsweeps),
      report("  server CPU/GiB gRPC/socket, gRPC at the median switches/GiB of its setting"; $norm | table(.[]; rkey; .norm); $nsweeps),
      "  socket server CPU per interrupt: " + ($ks | to_entries | map("\(if .key == 1 then "cache" else "no cache" end) \(.value.k * 1e6 * 10 | round / 10) us (r = \(.value.r * 100 | round / 100), \(.value.n) runs)") | join(", ")) + ", each setting centred",
      report("  socket interrupts/GiB"; $norm | table(.[]; rkey; .interrupts); $nsweeps),
      report("  server CPU/GiB gRPC/socket, socket at the median interrupts/GiB of its setting"; $norm | table(.[]; rkey; .sock_norm); $nsweeps),
      report("  server CPU/GiB gRPC/socket, both so priced"; $norm | table(.[]; rkey; .both_norm); $nsweeps),
      report("  server CPU/GiB gRPC/socket, socket at its own sweep'"'"'s median interrupts (the report'"'"'s)"; $ratios | table(.[]; rkey; .server_cpu_per_gib_grpc_over_sock_at_median_interrupts.median); $nsweeps),
      "settings:",
      report("  server CPU s/GiB"; $settings | table(.[]; skey; .figures.server_cpu_s_per_gib.median); $nsweeps),
      report("  throughput MiB/s (wall clock)"; $settings | table(.[]; skey; .figures.throughput_mib_s.median); $nsweeps),
      report("  throughput MiB/s if CPU-bound"; $settings | table(.[]; skey; .figures.cpu_bound_throughput_mib_s.median); $nsweeps),
      report("  clients CPU s/GiB"; $settings | table(.[]; skey; .figures.client_cpu_s_per_gib.median); $nsweeps),
      # beside it (in no ratio): the client processes alone (fetch-bench(1))
      report("  client processes'"'"' own CPU s/GiB"; $settings | table(.[]; skey; .figures.client_processes_cpu_s_per_gib.median); $nsweeps),
      report("  server + clients CPU s/GiB"; $settings | table(.[]; skey; .figures.server_client_cpu_s_per_gib.median); $nsweeps),
      report("  git CPU s/GiB"; $settings | table(.[]; skey; .figures.git_cpu_s_per_gib.median); $nsweeps),
      report("  allocations/fetch"; $settings | table(.[]; skey; .figures.alloc_calls_per_fetch.median); $nsweeps),
      # The speed of the machine in each sweep (its pieces averaged): per-setting
      # CPU figures move with it, ratios within a round much less.
      "machine probe CPU ms, median per sweep: " + (map([.[] | .machine_probe_ms.median? // empty]
          | if length > 0 then add / length | r3 | tostring else "-" end) | join(" ")),
      "compute probe CPU ms, median per sweep: " + (map([.[] | .compute_probe_ms.median? // empty]
          | if length > 0 then add / length | r3 | tostring else "-" end) | join(" ")),
      # A host slow for a whole sweep is slow against its own reference
      # (a low percentile of its probes) nowhere: compare the references.
      (map([.[] | .probe_reference_ms? // empty] | min) as $mem
       | map([.[] | .compute_probe_reference_ms? // empty] | min) as $cpu
       | "probe references (memory/compute ms, lowest piece) per sweep: "
         + ([range(length) | "\($mem[.] // "-" | if type == "number" then r3 else . end)/\($cpu[.] // "-" | if type == "number" then r3 else . end)"] | join(" ")),
         ([range(length) | select(($mem[.] != null and $mem[.] > 1.15 * ([$mem[] | values] | min))
                                  or ($cpu[.] != null and $cpu[.] > 1.15 * ([$cpu[] | values] | min)))
           | $names[.]] as $slow
          | if ($slow | length) > 0 then "  host slower throughout (a reference over 115 % of the lowest): \($slow | join(", ")): its CPU figures and ratios are not comparable"
            else "  no sweep slower throughout (every reference within 115 % of the lowest)" end)),
      # A host slow for most of a sweep passes its reference (a low
      # percentile) but not its median: each run'"'"'s probes over its piece'"'"'s
      # references, the median over the sweep (fetch-bench'"'"'s
      # probe_median_over_reference for a sweep in one piece).
      (map([.[] | (.probe_reference_ms? // 0) as $m | (.compute_probe_reference_ms? // 0) as $c
            | select($m > 0 and $c > 0) | (.settings // [])[] | .runs[]
            | { m: (.machine_probe_ms / $m), c: (.compute_probe_ms / $c) }]
           | { m: (map(.m) | med), c: (map(.c) | med) }) as $over
       | "probe medians over their reference (memory/compute %) per sweep: "
         + ($over | map(if .m == null then "-" else "\(.m * 100 | round)/\(.c * 100 | round)" end) | join(" ")),
         ([range(length) | select(($over[.].m // 0) > 1.15 or ($over[.].c // 0) > 1.15)
           | "\($names[.]) (\($over[.].m * 100 | round)/\($over[.].c * 100 | round) %)"] as $s
          | if ($s | length) > 0 then "  host slow for most of the sweep (a probe median over 115 % of its reference): \($s | join(", ")): most of its runs began on a slow host and its medians are mostly over every round: its CPU figures and ratios are a slow host'"'"'s"
            else "  no sweep slow for most of its runs (every probe median within 115 % of its reference)" end)),
      # Other work on the benchmark'"'"'s CPUs, which the probes do not see
      # (fetch-bench marks such runs crowded): a sweep with crowded runs
      # kept is not comparable either.
      (map([.[] | .settings[]? | .runs[]
            | .client_cpus_others_pct? // (select(.client_cpus_elapsed_s? > 0)   # (a report before it: the same)
              | 100 * (.client_cpu_s - .client_processes_cpu_s) / .client_cpus_elapsed_s)] | med) as $others
       | map([.[] | .runs_crowded_kept? // 0] | add // 0) as $kept
       | "clients'"'"' CPUs busy beyond the clients (%), median per sweep: "
         + ($others | map(if . == null then "-" else round | tostring end) | join(" ")),
         ([range(length) | select($kept[.] > 0 or ($others[.] // 0) > 25) | "\($names[.]) (median \($others[.] // 0 | round) %, \($kept[.]) crowded runs kept)"] as $c
          | if ($c | length) > 0 then "  other work on the CPUs (crowded runs kept, or a median over 25 %): \($c | join(", ")): their CPU figures and ratios are not comparable"
            else "  no sweep crowded (no crowded run kept, every median within 25 %)" end)),
      # The clients'"'"' CPU has slow spells of its own (fetch-bench'"'"'s memory
      # probe on it): runs kept so are out of the clients'"'"' figures only.
      "runs kept slow on the clients'"'"' CPU, per sweep: "
          + (map([.[] | .runs_clients_slow_kept? // empty] | if length > 0 then add | tostring else "-" end) | join(" ")),
      # How often the gRPC server switched threads: its CPU per GiB moves
      # with it (fetch-bench(1)); a sweep far from the others here is why
      # its gRPC ratios are.
      "gRPC server context switches/GiB, median per sweep: " + (map([.[] | .settings[]? | select(.server != "sock")
          | [.runs[] | select(.bytes > 0) | .server_context_switches / (.bytes / 1073741824)] | med // empty]
          | med // "-" | if type == "number" then round | tostring else . end) | join(" "))
' || exit 2
# The exit status: every ratio of every kind agrees.
bad=$(printf '%s' "$sweeps" | jq -s --argjson pct "$pct" '
    length as $n | map([.[] | .ratios[]?]) | to_entries
    | [ .[] | [.value[] | . as $r
        | ["server_cpu_per_gib_grpc_over_sock", "cpu_bound_throughput_sock_over_grpc", "throughput_sock_over_grpc",
           "alloc_bytes_per_gib_grpc_over_sock", "server_client_cpu_per_gib_grpc_over_sock"][] as $m | select($r[$m] != null)
        | { k: "\($r.repo) \($r.cache) \($r.clients) \($r.grpc_mode) \($m)", v: $r[$m].median }]
        | unique_by(.k)[] ]
    | group_by(.k) | map(select(length == $n) | map(.v)) | map(select(((max == min) or (min > 0 and (max / min - 1) * 100 <= $pct)) | not)) | length')
[ "$bad" = 0 ]
