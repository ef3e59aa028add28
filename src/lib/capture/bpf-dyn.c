/* SPDX-License-Identifier: GPL-2.0-only */
/* libbpf, loaded with dlopen() the first time a capture makes a BPF map or
 * program (capture/bpf.c, swtime.c).
 *
 * Linked, it was loaded by every flamekit command, with the libelf it
 * needs: collapse of an empty input went from 101 to 117 page faults and
 * every input's peak RSS grew by 0.3-0.4 MB, for commands (collapse, svg,
 * diff, merge, pprof) that never load a program. So these definitions of
 * the entry points capture/ calls forward to the real ones (flamekit
 * exports no symbols, so libbpf's own calls never reach these). They are
 * in their own archive (libfkbpfdyn.a), which flamekit-portable does not
 * link: it has libbpf linked statically instead. A libbpf function
 * called anywhere else needs its forwarder here (the link fails
 * without one). When libbpf is missing, fk_bpf_lib_load says which
 * package to install and the entry points fail as libbpf does (-1 with
 * errno, NULL). */
#include "capture/bpf-dyn.h"
#include "util/dynlib.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>

static struct fk_dynlib libbpf = {
    .soname = "libbpf.so.1", .who = "loading BPF programs (off-CPU, Python frames)",
    .package = "libbpf1", .newer = "libbpf1 1.0 or newer",
};
static struct {
    int (*map_create)(enum bpf_map_type, const char *, __u32, __u32, __u32,
                      const struct bpf_map_create_opts *);
    int (*map_update_elem)(int, const void *, const void *, __u64);
    int (*map_lookup_elem)(int, const void *, void *);
    int (*map_delete_elem)(int, const void *);
    int (*map_get_next_key)(int, const void *, void *);
    int (*map_lookup_batch)(int, void *, void *, void *, void *, __u32 *,
                            const struct bpf_map_batch_opts *);
    int (*obj_get_info_by_fd)(int, void *, __u32 *);
    int (*prog_load)(enum bpf_prog_type, const char *, const char *, const struct bpf_insn *,
                     size_t, const struct bpf_prog_load_opts *);
    int (*prog_test_run_opts)(int, struct bpf_test_run_opts *);
    int (*num_possible_cpus)(void);
    struct ring_buffer *(*ring_new)(int, ring_buffer_sample_fn, void *,
                                    const struct ring_buffer_opts *);
    void (*ring_free)(struct ring_buffer *);
    int (*ring_consume)(struct ring_buffer *);
    struct btf *(*btf_load_vmlinux)(void);
    __s32 (*btf_find)(const struct btf *, const char *, __u32);
    const struct btf_type *(*btf_type)(const struct btf *, __u32);
    const char *(*btf_name)(const struct btf *, __u32);
    void (*btf_free)(struct btf *);
} lib;

bool fk_bpf_lib_load(char *err, size_t errlen)
{
    const struct fk_dynsym syms[] = {
        { "bpf_map_create", (void **)&lib.map_create },
        { "bpf_map_update_elem", (void **)&lib.map_update_elem },
        { "bpf_map_lookup_elem", (void **)&lib.map_lookup_elem },
        { "bpf_map_delete_elem", (void **)&lib.map_delete_elem },
        { "bpf_map_get_next_key", (void **)&lib.map_get_next_key },
        { "bpf_map_lookup_batch", (void **)&lib.map_lookup_batch },
        { "bpf_obj_get_info_by_fd", (void **)&lib.obj_get_info_by_fd },
        { "bpf_prog_load", (void **)&lib.prog_load },
        { "bpf_prog_test_run_opts", (void **)&lib.prog_test_run_opts },
        { "libbpf_num_possible_cpus", (void **)&lib.num_possible_cpus },
        { "ring_buffer__new", (void **)&lib.ring_new },
        { "ring_buffer__free", (void **)&lib.ring_free },
        { "ring_buffer__consume", (void **)&lib.ring_consume },
        { "btf__load_vmlinux_btf", (void **)&lib.btf_load_vmlinux },
        { "btf__find_by_name_kind", (void **)&lib.btf_find },
        { "btf__type_by_id", (void **)&lib.btf_type },
        { "btf__name_by_offset", (void **)&lib.btf_name },
        { "btf__free", (void **)&lib.btf_free },
    };
    return fk_dynlib_once(&libbpf, syms, sizeof syms / sizeof syms[0], err, errlen);
}

/* Loaded, or errno ENOSYS (libbpf's convention: -1 and errno, or a
 * negative errno; the callers read errno). */
static bool loaded(void)
{
    if (libbpf.state > 0 || fk_bpf_lib_load(NULL, 0))
        return true;
    errno = ENOSYS;
    return false;
}

int bpf_map_create(enum bpf_map_type map_type, const char *map_name, __u32 key_size,
                   __u32 value_size, __u32 max_entries, const struct bpf_map_create_opts *opts)
{
    return loaded() ? lib.map_create(map_type, map_name, key_size, value_size, max_entries, opts)
                    : -ENOSYS;
}

int bpf_map_update_elem(int fd, const void *key, const void *value, __u64 flags)
{
    return loaded() ? lib.map_update_elem(fd, key, value, flags) : -ENOSYS;
}

int bpf_map_lookup_elem(int fd, const void *key, void *value)
{
    return loaded() ? lib.map_lookup_elem(fd, key, value) : -ENOSYS;
}

int bpf_map_delete_elem(int fd, const void *key)
{
    return loaded() ? lib.map_delete_elem(fd, key) : -ENOSYS;
}

int bpf_map_get_next_key(int fd, const void *key, void *next_key)
{
    return loaded() ? lib.map_get_next_key(fd, key, next_key) : -ENOSYS;
}

int bpf_map_lookup_batch(int fd, void *in_batch, void *out_batch, void *keys, void *values,
                         __u32 *count, const struct bpf_map_batch_opts *opts)
{
    return loaded() ? lib.map_lookup_batch(fd, in_batch, out_batch, keys, values, count, opts)
                    : -ENOSYS;
}

int bpf_obj_get_info_by_fd(int bpf_fd, void *info, __u32 *info_len)
{
    return loaded() ? lib.obj_get_info_by_fd(bpf_fd, info, info_len) : -ENOSYS;
}

int bpf_prog_load(enum bpf_prog_type prog_type, const char *prog_name, const char *license,
                  const struct bpf_insn *insns, size_t insn_cnt,
                  const struct bpf_prog_load_opts *opts)
{
    return loaded() ? lib.prog_load(prog_type, prog_name, license, insns, insn_cnt, opts)
                    : -ENOSYS;
}

int bpf_prog_test_run_opts(int prog_fd, struct bpf_test_run_opts *opts)
{
    return loaded() ? lib.prog_test_run_opts(prog_fd, opts) : -ENOSYS;
}

int libbpf_num_possible_cpus(void)
{
    return loaded() ? lib.num_possible_cpus() : -ENOSYS;
}

struct ring_buffer *ring_buffer__new(int map_fd, ring_buffer_sample_fn sample_cb, void *ctx,
                                     const struct ring_buffer_opts *opts)
{
    return loaded() ? lib.ring_new(map_fd, sample_cb, ctx, opts) : NULL;
}

void ring_buffer__free(struct ring_buffer *rb)
{
    if (libbpf.state > 0)   /* none was made otherwise */
        lib.ring_free(rb);
}

int ring_buffer__consume(struct ring_buffer *rb)
{
    return loaded() ? lib.ring_consume(rb) : -ENOSYS;
}

struct btf *btf__load_vmlinux_btf(void)
{
    return loaded() ? lib.btf_load_vmlinux() : NULL;
}

__s32 btf__find_by_name_kind(const struct btf *btf, const char *name, __u32 kind)
{
    return loaded() ? lib.btf_find(btf, name, kind) : -ENOSYS;
}

const struct btf_type *btf__type_by_id(const struct btf *btf, __u32 id)
{
    return loaded() ? lib.btf_type(btf, id) : NULL;
}

const char *btf__name_by_offset(const struct btf *btf, __u32 offset)
{
    return loaded() ? lib.btf_name(btf, offset) : NULL;
}

void btf__free(struct btf *btf)
{
    if (libbpf.state > 0)   /* none was made otherwise */
        lib.btf_free(btf);
}
