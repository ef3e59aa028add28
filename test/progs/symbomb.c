/* SPDX-License-Identifier: GPL-2.0-only */
/* Writes a crafted x86-64 ELF executable for the symbol-table hardening
 * tests (test/t-harden-syms.sh): a static program that spins forever in
 * a run of NOPs, whose symbol table holds NSYMS function symbols, one per
 * code byte, all naming one string of NAMELEN bytes ("same") or each a
 * different suffix of it ("suffix"). With "debugdata" the table is not in
 * the file's .symtab but in an xz-compressed ELF in .gnu_debugdata
 * (MiniDebugInfo), so the decompression path is the one attacked.
 * What a hostile local user can plant for a root profiler to read; the
 * file itself stays about NAMELEN + 24 * NSYMS bytes.
 * usage: symbomb OUT NSYMS NAMELEN same|suffix [debugdata] */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BASE 0x400000u
#define CODE_OFF 0x1000u

struct out {
    unsigned char *p;
    size_t len, cap;
};

static void put(struct out *o, const void *data, size_t n)
{
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n)
            cap *= 2;
        o->p = realloc(o->p, cap);
        if (!o->p) {
            perror("symbomb: realloc");
            exit(1);
        }
        o->cap = cap;
    }
    if (data)
        memcpy(o->p + o->len, data, n);
    else
        memset(o->p + o->len, 0, n);
    o->len += n;
}

static void align(struct out *o, size_t a)
{
    if (o->len % a)
        put(o, NULL, a - o->len % a);
}

/* Sections of one file: .text (PROGBITS at CODE_OFF, or NOBITS in the
 * inner debug file), then .symtab/.strtab when syms, then .gnu_debugdata
 * when dd, then .shstrtab. */
static void write_elf(struct out *o, bool exec, size_t codelen, size_t nsyms, size_t namelen,
                      bool suffix, const unsigned char *dd, size_t ddlen)
{
    Elf64_Ehdr eh = { 0 };
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_entry = BASE + CODE_OFF;
    eh.e_ehsize = sizeof eh;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    put(o, &eh, sizeof eh);
    if (exec) {
        Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
                          .p_vaddr = BASE, .p_paddr = BASE, .p_filesz = CODE_OFF + codelen,
                          .p_memsz = CODE_OFF + codelen, .p_align = 0x1000 };
        ((Elf64_Ehdr *)o->p)->e_phoff = o->len;
        ((Elf64_Ehdr *)o->p)->e_phentsize = sizeof ph;
        ((Elf64_Ehdr *)o->p)->e_phnum = 1;
        put(o, &ph, sizeof ph);
        put(o, NULL, CODE_OFF - o->len);
        /* NOPs, then jmp back to the first: rel32 from the jump's end */
        for (size_t i = 0; i + 5 < codelen; i++)
            put(o, "\x90", 1);
        int32_t rel = -(int32_t)codelen;
        put(o, "\xe9", 1);
        put(o, &rel, 4);
    }
    Elf64_Shdr sh[6] = { { 0 } };
    int n = 1, text = n++, symtab = 0, strtab = 0, ddsec = 0;
    sh[text] = (Elf64_Shdr){ .sh_type = exec ? SHT_PROGBITS : SHT_NOBITS,
                             .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = BASE + CODE_OFF,
                             .sh_offset = exec ? CODE_OFF : 0, .sh_size = codelen, .sh_addralign = 1 };
    if (nsyms) {
        symtab = n++;
        strtab = n++;
        align(o, 8);
        sh[symtab] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = o->len,
                                   .sh_size = (nsyms + 1) * sizeof(Elf64_Sym), .sh_link = strtab,
                                   .sh_info = (Elf64_Word)(nsyms + 1), .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) };
        put(o, NULL, sizeof(Elf64_Sym));
        size_t step = suffix && nsyms > 1 ? (namelen - 1) / nsyms : 0;
        for (size_t i = 0; i < nsyms; i++) {
            Elf64_Sym s = { .st_name = (Elf64_Word)(1 + i * step),
                            .st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC), .st_shndx = (Elf64_Half)text,
                            .st_value = BASE + CODE_OFF + i % codelen, .st_size = 1 };
            put(o, &s, sizeof s);
        }
        sh[strtab] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = o->len,
                                   .sh_size = namelen + 2, .sh_addralign = 1 };
        put(o, NULL, 1);
        /* suffix: letters from an LCG (no two suffixes begin alike);
         * same: one letter (a few KiB once compressed) */
        uint32_t x = 1;
        for (size_t i = 0; i < namelen; i++) {
            x = x * 1103515245u + 12345u;
            char c = suffix ? (char)('a' + (x >> 16) % 26) : 'A';
            put(o, &c, 1);
        }
        put(o, NULL, 1);
    }
    if (dd) {
        ddsec = n++;
        sh[ddsec] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_offset = o->len, .sh_size = ddlen,
                                  .sh_addralign = 1 };
        put(o, dd, ddlen);
    }
    static const char shstr[] = "\0.text\0.symtab\0.strtab\0.gnu_debugdata\0.shstrtab";
    int shstrtab = n++;
    sh[text].sh_name = 1;
    if (symtab) {
        sh[symtab].sh_name = 7;
        sh[strtab].sh_name = 15;
    }
    if (ddsec)
        sh[ddsec].sh_name = 23;
    sh[shstrtab] = (Elf64_Shdr){ .sh_name = 38, .sh_type = SHT_STRTAB, .sh_offset = o->len,
                                 .sh_size = sizeof shstr, .sh_addralign = 1 };
    put(o, shstr, sizeof shstr);
    align(o, 8);
    Elf64_Ehdr *h = (Elf64_Ehdr *)o->p;
    h->e_shoff = o->len;
    h->e_shnum = (Elf64_Half)n;
    h->e_shstrndx = (Elf64_Half)shstrtab;
    put(o, sh, (size_t)n * sizeof *sh);
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[4], "same") != 0 && strcmp(argv[4], "suffix") != 0)) {
        fprintf(stderr, "usage: symbomb OUT NSYMS NAMELEN same|suffix [debugdata]\n");
        return 2;
    }
    size_t nsyms = strtoul(argv[2], NULL, 10), namelen = strtoul(argv[3], NULL, 10);
    bool suffix = strcmp(argv[4], "suffix") == 0;
    bool debugdata = argc > 5 && strcmp(argv[5], "debugdata") == 0;
    if (nsyms == 0 || namelen < 2 || namelen > UINT32_MAX / 2) {
        fprintf(stderr, "symbomb: NSYMS must be positive and NAMELEN at least 2\n");
        return 2;
    }
    size_t codelen = nsyms < 64 ? 64 : nsyms;
    struct out o = { 0 };
    if (debugdata) {
        struct out inner = { 0 };
        write_elf(&inner, false, codelen, nsyms, namelen, suffix, NULL, 0);
        size_t cap = lzma_stream_buffer_bound(inner.len), len = 0;
        unsigned char *xz = malloc(cap);
        if (!xz || lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, inner.p, inner.len, xz,
                                           &len, cap) != LZMA_OK) {
            fprintf(stderr, "symbomb: xz compression failed\n");
            return 1;
        }
        write_elf(&o, true, codelen, 0, 0, false, xz, len);
        free(xz);
        free(inner.p);
    } else {
        write_elf(&o, true, codelen, nsyms, namelen, suffix, NULL, 0);
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (fd < 0 || write(fd, o.p, o.len) != (ssize_t)o.len || close(fd) != 0) {
        fprintf(stderr, "symbomb: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    free(o.p);
    return 0;
}
