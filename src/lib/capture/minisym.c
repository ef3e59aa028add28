/* SPDX-License-Identifier: GPL-2.0-only */
/* A small symbolizer for one-event captures: see minisym.h. */
#include "capture/minisym.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct sym { uint64_t addr, size; uint32_t name; };

struct dso {
    char *path;
    bool tried, ok;
    struct sym *syms;
    size_t nsyms;
    char *names;            /* all symbol names, NUL-separated */
    struct { uint64_t off, vaddr, filesz; } *loads;
    size_t nloads;
};

struct map { uint64_t start, end, pgoff; uint32_t dso; };

struct proc {
    pid_t pid;
    bool scanned;
    char comm[32];
    struct map *maps;
    size_t nmaps, cap;
};

struct tcomm { pid_t tid; char comm[32]; };

struct ksym { uint64_t addr; char *name; };

struct fk_minisym {
    bool kernel;
    struct ksym *ksyms;
    size_t nksyms;
    struct dso *dsos;       /* index 0 unused */
    size_t ndsos, dsocap;
    struct proc **procs;    /* open addressing by pid */
    size_t nprocs, procmask;
    struct tcomm *tcomms;   /* open addressing by tid, tid 0 = empty */
    size_t ntcomms, tcmask;
    uint64_t unresolved;
};

/* --- pid-keyed tables ---------------------------------------------------- */

static size_t pid_slot(pid_t pid, size_t mask)
{
    return ((uint32_t)pid * 2654435761u) & mask;
}

static struct proc **proc_slot(struct fk_minisym *s, pid_t pid)
{
    size_t i = pid_slot(pid, s->procmask);
    while (s->procs[i] && s->procs[i]->pid != pid)
        i = (i + 1) & s->procmask;
    return &s->procs[i];
}

static void procs_grow(struct fk_minisym *s)
{
    struct proc **old = s->procs;
    size_t oldn = s->procmask + 1;
    s->procmask = oldn * 2 - 1;
    s->procs = fk_calloc(oldn * 2, sizeof *s->procs);
    for (size_t i = 0; i < oldn; i++)
        if (old[i])
            *proc_slot(s, old[i]->pid) = old[i];
    free(old);
}

static struct proc *proc_find(struct fk_minisym *s, pid_t pid)
{
    return *proc_slot(s, pid);
}

static struct proc *proc_get(struct fk_minisym *s, pid_t pid)
{
    struct proc **slot = proc_slot(s, pid);
    if (*slot)
        return *slot;
    if ((s->nprocs + 1) * 2 > s->procmask + 1) {
        procs_grow(s);
        slot = proc_slot(s, pid);
    }
    struct proc *p = fk_calloc(1, sizeof *p);
    p->pid = pid;
    *slot = p;
    s->nprocs++;
    return p;
}

static struct tcomm *tcomm_slot(struct fk_minisym *s, pid_t tid)
{
    size_t i = pid_slot(tid, s->tcmask);
    while (s->tcomms[i].tid && s->tcomms[i].tid != tid)
        i = (i + 1) & s->tcmask;
    return &s->tcomms[i];
}

static void tcomm_set(struct fk_minisym *s, pid_t tid, const char *comm)
{
    if (tid <= 0)
        return;
    if ((s->ntcomms + 1) * 2 > s->tcmask + 1) {
        struct tcomm *old = s->tcomms;
        size_t oldn = s->tcmask + 1;
        s->tcmask = oldn * 2 - 1;
        s->tcomms = fk_calloc(oldn * 2, sizeof *s->tcomms);
        for (size_t i = 0; i < oldn; i++)
            if (old[i].tid)
                *tcomm_slot(s, old[i].tid) = old[i];
        free(old);
    }
    struct tcomm *t = tcomm_slot(s, tid);
    if (!t->tid) {
        t->tid = tid;
        s->ntcomms++;
    }
    snprintf(t->comm, sizeof t->comm, "%s", comm);
}

/* --- kernel -------------------------------------------------------------- */

static int ksym_cmp(const void *a, const void *b)
{
    const struct ksym *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(struct fk_minisym *s)
{
    FILE *f = fopen("/proc/kallsyms", "r");
    if (!f) {
        fk_warn("cannot read /proc/kallsyms (%s): kernel frames will be unnamed", strerror(errno));
        return;
    }
    size_t cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long addr;
        char type, name[256];
        if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
            continue;
        if (type != 't' && type != 'T' && type != 'w' && type != 'W')
            continue;
        s->ksyms = fk_grow(s->ksyms, &cap, s->nksyms + 1, sizeof *s->ksyms);
        s->ksyms[s->nksyms].addr = addr;
        s->ksyms[s->nksyms].name = fk_strdup(name);
        s->nksyms++;
    }
    fclose(f);
    if (!s->nksyms)
        fk_warn("/proc/kallsyms shows no addresses (kernel.kptr_restrict?): kernel frames will be unnamed");
    qsort(s->ksyms, s->nksyms, sizeof *s->ksyms, ksym_cmp);
}

/* --- ELF ----------------------------------------------------------------- */

static int sym_cmp(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void dso_load(struct dso *d, pid_t pid)
{
    d->tried = true;
    int fd = open(d->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && pid > 0) {
        /* Another mount namespace (container): through the process's root. */
        char *p = fk_asprintf("/proc/%d/root%s", (int)pid, d->path);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        free(p);
    }
    if (fd < 0)
        return;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF)
        goto out;
    size_t nph;
    if (elf_getphdrnum(e, &nph) == 0) {
        d->loads = fk_calloc(nph ? nph : 1, sizeof *d->loads);
        for (size_t i = 0; i < nph; i++) {
            GElf_Phdr ph;
            if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
                d->loads[d->nloads].off = ph.p_offset;
                d->loads[d->nloads].vaddr = ph.p_vaddr;
                d->loads[d->nloads].filesz = ph.p_filesz;
                d->nloads++;
            }
        }
    }
    /* .symtab when present (unstripped), else .dynsym. */
    Elf_Scn *best = NULL, *scn = NULL;
    GElf_Shdr bsh = { 0 };
    while ((scn = elf_nextscn(e, scn))) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !best)) {
            best = scn;
            bsh = sh;
        }
    }
    if (best && bsh.sh_entsize) {
        Elf_Data *data = elf_getdata(best, NULL);
        size_t n = bsh.sh_size / bsh.sh_entsize, cap = 0;
        struct fk_buf names = FK_BUF_INIT;
        for (size_t i = 0; data && i < n; i++) {
            GElf_Sym sy;
            if (!gelf_getsym(data, (int)i, &sy) || !sy.st_value || sy.st_shndx == SHN_UNDEF)
                continue;
            int t = GELF_ST_TYPE(sy.st_info);
            if (t != STT_FUNC && t != STT_GNU_IFUNC)
                continue;
            const char *nm = elf_strptr(e, bsh.sh_link, sy.st_name);
            if (!nm || !*nm)
                continue;
            d->syms = fk_grow(d->syms, &cap, d->nsyms + 1, sizeof *d->syms);
            d->syms[d->nsyms].addr = sy.st_value;
            d->syms[d->nsyms].size = sy.st_size;
            d->syms[d->nsyms].name = (uint32_t)names.len;
            fk_buf_add(&names, nm, strlen(nm) + 1);
            d->nsyms++;
        }
        d->names = names.data;
        qsort(d->syms, d->nsyms, sizeof *d->syms, sym_cmp);
    }
    d->ok = true;
out:
    if (e)
        elf_end(e);
    close(fd);
}

static uint32_t dso_get(struct fk_minisym *s, const char *path)
{
    for (size_t i = 1; i < s->ndsos; i++)
        if (!strcmp(s->dsos[i].path, path))
            return (uint32_t)i;
    if (!s->ndsos)
        s->ndsos = 1;
    s->dsos = fk_grow(s->dsos, &s->dsocap, s->ndsos + 1, sizeof *s->dsos);
    memset(&s->dsos[s->ndsos], 0, sizeof s->dsos[0]);
    s->dsos[s->ndsos].path = fk_strdup(path);
    return (uint32_t)s->ndsos++;
}

/* --- address spaces ------------------------------------------------------ */

static void proc_add_map(struct fk_minisym *s, struct proc *p, uint64_t start, uint64_t end,
                         uint64_t pgoff, const char *path)
{
    if (end <= start)
        return;
    /* Drop what the new mapping covers (a partial overlap drops it all:
     * good enough for executable mappings, which are replaced whole). */
    size_t w = 0;
    for (size_t i = 0; i < p->nmaps; i++)
        if (p->maps[i].end <= start || p->maps[i].start >= end)
            p->maps[w++] = p->maps[i];
    p->nmaps = w;
    p->maps = fk_grow(p->maps, &p->cap, p->nmaps + 1, sizeof *p->maps);
    size_t at = p->nmaps;
    while (at > 0 && p->maps[at - 1].start > start)
        at--;
    memmove(&p->maps[at + 1], &p->maps[at], (p->nmaps - at) * sizeof *p->maps);
    p->maps[at] = (struct map){ start, end, pgoff, dso_get(s, path) };
    p->nmaps++;
}

static void read_comm(pid_t pid, char *comm, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(comm, (int)n, f))
        comm[strcspn(comm, "\n")] = 0;
    fclose(f);
}

void fk_minisym_scan_pid(struct fk_minisym *s, pid_t pid)
{
    struct proc *p = proc_get(s, pid);
    p->scanned = true;
    if (!p->comm[0])
        read_comm(pid, p->comm, sizeof p->comm);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[4096 + 128];
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b, off;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &a, &b, perms, &off, &pos) < 4 || !pos)
            continue;
        if (perms[2] != 'x')
            continue;
        char *name = line + pos;
        name[strcspn(name, "\n")] = 0;
        if (!*name)
            continue;
        proc_add_map(s, p, a, b, off, name);
    }
    fclose(f);
}

void fk_minisym_scan_all(struct fk_minisym *s)
{
    DIR *d = opendir("/proc");
    if (!d) {
        fk_warn("cannot list /proc (%s): processes already running will be unnamed", strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        fk_minisym_scan_pid(s, (pid_t)pid);
    }
    closedir(d);
}

void fk_minisym_comm(struct fk_minisym *s, pid_t pid, pid_t tid, const char *comm, bool exec)
{
    /* On exec the old maps are not dropped: records of different CPUs'
     * rings arrive out of order, and the new program's MMAP2 records replace
     * what they overlap; a stale range no new code lives in is harmless. */
    (void)exec;
    if (pid == tid) {
        struct proc *p = proc_get(s, pid);
        snprintf(p->comm, sizeof p->comm, "%s", comm);
    }
    tcomm_set(s, tid, comm);
}

void fk_minisym_fork(struct fk_minisym *s, pid_t pid, pid_t ppid)
{
    if (pid == ppid)
        return;                 /* a new thread shares its process's maps */
    struct proc *child = proc_get(s, pid);
    struct proc *parent = proc_find(s, ppid);   /* after proc_get: it may rehash */
    child->scanned = true;
    if (parent) {
        /* fork(): the child starts with a copy of its parent's maps. */
        snprintf(child->comm, sizeof child->comm, "%s", parent->comm);
        child->cap = parent->nmaps ? parent->nmaps : 1;
        child->maps = fk_realloc(child->maps, child->cap * sizeof *child->maps);
        memcpy(child->maps, parent->maps, parent->nmaps * sizeof *child->maps);
        child->nmaps = parent->nmaps;
    }
}

void fk_minisym_exit(struct fk_minisym *s, pid_t pid, pid_t tid)
{
    /* Keep the process: its last samples may still be in another ring. */
    (void)s; (void)pid; (void)tid;
}

void fk_minisym_mmap(struct fk_minisym *s, pid_t pid, uint64_t start, uint64_t len,
                     uint64_t pgoff, uint32_t prot, const char *filename)
{
    if (!(prot & PROT_EXEC) || !filename || !*filename)
        return;
    struct proc *p = proc_get(s, pid);
    if (!p->scanned)
        fk_minisym_scan_pid(s, pid);
    proc_add_map(s, p, start, start + len, pgoff, filename);
}

const char *fk_minisym_comm_of(struct fk_minisym *s, pid_t pid, pid_t tid)
{
    struct tcomm *t = tcomm_slot(s, tid);
    if (t->tid == tid && t->comm[0])
        return t->comm;
    char comm[32] = "";
    char path[80];
    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    if (!comm[0]) {
        struct proc *p = proc_find(s, pid);
        snprintf(comm, sizeof comm, "%s", p && p->comm[0] ? p->comm : "[unknown]");
    }
    tcomm_set(s, tid, comm);
    return tcomm_slot(s, tid)->comm;
}

static const char *basename_of(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

void fk_minisym_name(struct fk_minisym *s, pid_t pid, uint64_t ip, bool kernel, struct fk_buf *out)
{
    if (kernel) {
        size_t lo = 0, hi = s->nksyms;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->ksyms[mid].addr <= ip)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0) {
            s->unresolved++;
            fk_buf_adds(out, "[unknown]_[k]");
            return;
        }
        fk_buf_adds(out, s->ksyms[lo - 1].name);
        fk_buf_adds(out, "_[k]");
        return;
    }
    struct proc *p = proc_find(s, pid);
    if (!p || !p->scanned) {
        fk_minisym_scan_pid(s, pid);
        p = proc_find(s, pid);
    }
    const struct map *m = NULL;
    size_t lo = 0, hi = p->nmaps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->maps[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && ip < p->maps[lo - 1].end)
        m = &p->maps[lo - 1];
    if (!m) {
        s->unresolved++;
        fk_buf_adds(out, "[unknown]");
        return;
    }
    struct dso *d = &s->dsos[m->dso];
    uint64_t off = ip - m->start + m->pgoff;
    if (d->path[0] == '[') {            /* [vdso], [vsyscall] */
        fk_buf_adds(out, d->path);
        return;
    }
    if (!d->tried)
        dso_load(d, pid);
    uint64_t vaddr = off;
    bool mapped = false;
    for (size_t i = 0; i < d->nloads; i++)
        if (off >= d->loads[i].off && off < d->loads[i].off + d->loads[i].filesz) {
            vaddr = off - d->loads[i].off + d->loads[i].vaddr;
            mapped = true;
            break;
        }
    if (mapped && d->nsyms) {
        lo = 0, hi = d->nsyms;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (d->syms[mid].addr <= vaddr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0) {
            const struct sym *sy = &d->syms[lo - 1];
            if (!sy->size || vaddr < sy->addr + sy->size) {
                fk_buf_adds(out, d->names + sy->name);
                return;
            }
        }
    }
    s->unresolved++;
    fk_buf_printf(out, "[%s+0x%llx]", basename_of(d->path), (unsigned long long)off);
}

struct fk_minisym *fk_minisym_new(bool kernel)
{
    struct fk_minisym *s = fk_calloc(1, sizeof *s);
    s->kernel = kernel;
    s->procmask = 255;
    s->procs = fk_calloc(s->procmask + 1, sizeof *s->procs);
    s->tcmask = 255;
    s->tcomms = fk_calloc(s->tcmask + 1, sizeof *s->tcomms);
    if (kernel)
        load_kallsyms(s);
    return s;
}

void fk_minisym_free(struct fk_minisym *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nksyms; i++)
        free(s->ksyms[i].name);
    free(s->ksyms);
    for (size_t i = 1; i < s->ndsos; i++) {
        free(s->dsos[i].path);
        free(s->dsos[i].syms);
        free(s->dsos[i].names);
        free(s->dsos[i].loads);
    }
    free(s->dsos);
    for (size_t i = 0; i <= s->procmask; i++)
        if (s->procs[i]) {
            free(s->procs[i]->maps);
            free(s->procs[i]);
        }
    free(s->procs);
    free(s->tcomms);
    free(s);
}

void fk_minisym_stats(const struct fk_minisym *s, struct fk_minisym_stats *out)
{
    out->dsos = s->ndsos ? s->ndsos - 1 : 0;
    out->processes = s->nprocs;
    out->unresolved = s->unresolved;
}
