/* SPDX-License-Identifier: GPL-2.0-only */
/* The capture request's option sets (see capture-options.h). */
#include "capture-options.h"

#include <limits.h>
#include <unistd.h>

#define RQ(field) offsetof(struct fk_profile_request, field)

static bool set_stdout(void *base, const char *val, char *err, size_t n)
{
    (void)val;
    (void)err;
    (void)n;
    struct fk_profile_request *rq = base;
    rq->temp_dir = true;
    rq->stream_fd = STDOUT_FILENO;
    return true;
}

const struct fk_opt fk_optset_capture[] = {
    { "duration", 'd', FK_OPT_DURATION, RQ(duration_ms), "DUR",
      "capture length: 30, 30s, 2m, 500ms (default 60s; run: until the command "
      "exits; at most 5m)", "30s" },
    { "no-kernel", 0, FK_OPT_FLAG, RQ(no_kernel), NULL,
      "user-space stacks only (works with perf_event_paranoid 2 for your own "
      "processes)" },
    { "call-graph", 0, FK_OPT_CHOICE, RQ(callgraph), "MODE",
      "user stacks: auto (default: dwarf where allowed, else fp, saying why), "
      "dwarf (copy the stack with each sample and unwind it from .eh_frame as it "
      "is read: complete stacks for code built without frame pointers), fp (the "
      "kernel's frame-pointer walk: cheapest, callers of such code lost)", "auto",
      .choices = "auto|dwarf|fp" },
    { "stack-size", 0, FK_OPT_SIZE, RQ(stack_size), "SIZE",
      "stack bytes copied per sample in dwarf mode (default 32K, 512 to 65528); "
      "deeper stacks end in a [truncated] frame", "16K",
      .min = FK_STACK_SIZE_MIN, .max = FK_STACK_SIZE_MAX },
    { "python", 0, FK_OPT_CHOICE, RQ(python), "MODE",
      "CPython 3.11 frames in the stacks, read from the process without stopping "
      "it: on (the default: each Python function as qualname_[p]), lines (with "
      "its file.py:LINE), off (the interpreter's C frames as they are)", "off",
      .choices = "on|lines|off" },
    { "debuginfod", 0, FK_OPT_STR, RQ(debuginfod), "URLS",
      "fetch missing debug files by build-id from these debuginfod servers "
      "(default: $DEBUGINFOD_URLS; 10 s per file, 30 s in all)", "http://127.0.0.1:8002" },
    { "no-debuginfod", 0, FK_OPT_FLAG, RQ(no_debuginfod), NULL,
      "never fetch debug files, even with $DEBUGINFOD_URLS set" },
    { "no-priority", 0, FK_OPT_FLAG, RQ(no_priority), NULL,
      "keep the capture's threads at flamekit's own priority (by default they run "
      "10 nice levels higher through the window where allowed, so a busy host "
      "cannot make the rings overflow)" },
    { "redact-args", 0, FK_OPT_FLAG, RQ(redact_args), NULL,
      "keep only the first word of the command lines (flamekit's, run's) and no "
      "working directory in the .json, the SVG and the summary: for secrets in "
      "arguments, before --upload" },
    { NULL },
};

const struct fk_opt fk_optset_cpu[] = {
    { "freq", 'F', FK_OPT_UINT, RQ(freq), "HZ",
      "samples per second per CPU (default 99, at most 999 and the kernel's "
      "perf_event_max_sample_rate)", "99", .min = 1 },
    { NULL },
};

const struct fk_opt fk_optset_limits[] = {
    { "max-memory", 0, FK_OPT_SIZE, RQ(max_mem_bytes), "SIZE",
      "stop cleanly when stacks and symbols use more (default 256M, at most 1G)", "256M",
      .min = FK_PROFILE_MIN_MEM },
    { "unsafe-limits", 0, FK_OPT_FLAG, RQ(unsafe_limits), NULL,
      "allow durations up to 24h, frequencies up to the kernel's limit, memory up "
      "to 16G (and faults: -c down to 1)" },
    { NULL },
};

const struct fk_opt fk_optset_output[] = {
    { "output-dir", 'o', FK_OPT_STR, RQ(outdir), "DIR",
      "write the files into DIR (created 0700 if missing; default: a new private "
      "directory HOST.YYYYMMDD_HHMMSS_UTC.SCOPE here)", "DIR" },
    { "stdout", 0, FK_OPT_CALL, 0, NULL,
      "stream the files to stdout (for ssh / flamekit remote)", .call = set_stdout },
    { "no-svg", 0, FK_OPT_FLAG, RQ(no_svg), NULL, "skip the SVG (folded.gz and json only)" },
    { "title", 0, FK_OPT_STR, RQ(title), "TEXT", "the SVG's title", "'db1 at peak'" },
    { "upload", 0, FK_OPT_STR, RQ(upload), "URL",
      "then upload the files to s3://BUCKET/PREFIX/ or gs://BUCKET/PREFIX/ "
      "(credentials and endpoint: see flamekit-upload(1))", "s3://bucket/prefix/" },
    { "quiet", 'q', FK_OPT_FLAG, RQ(quiet), NULL, "no progress line and no summary" },
    { "ready-fd", 0, FK_OPT_INT, RQ(ready_fd), "FD",
      "once the capture runs (events on, the target's memory maps read), write "
      "\"ready\" and a newline to file descriptor FD (3 or above) and close it: "
      "for scripts that start a load only then; closed without it when the "
      "capture fails first", "3", .min = 3, .max = INT_MAX },
    { NULL },
};
