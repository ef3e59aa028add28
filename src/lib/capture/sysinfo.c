/* SPDX-License-Identifier: GPL-2.0-only */
/* Facts about the machine for a capture's metadata. */
#include "capture/sysinfo.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static char *read_line(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    if (n <= 0) {
        free(line);
        return NULL;
    }
    line[strcspn(line, "\n")] = 0;
    return line;
}

static void os_release(json_t *os)
{
    FILE *f = fopen("/etc/os-release", "re");
    if (!f)
        f = fopen("/usr/lib/os-release", "re");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        if (strcmp(line, "PRETTY_NAME") && strcmp(line, "ID") && strcmp(line, "VERSION_ID") &&
            strcmp(line, "VERSION_CODENAME"))
            continue;
        char *v = eq + 1;
        size_t n = strlen(v);
        if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
            v[n - 1] = 0;
            v++;
        }
        for (char *p = line; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        json_object_set_new(os, line, json_string(v));
    }
    fclose(f);
}

static void meminfo(json_t *mem)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
            json_object_set_new(mem, "total_bytes", json_integer((json_int_t)(kb * 1024)));
        else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            json_object_set_new(mem, "available_bytes", json_integer((json_int_t)(kb * 1024)));
        else if (sscanf(line, "SwapTotal: %llu kB", &kb) == 1)
            json_object_set_new(mem, "swap_total_bytes", json_integer((json_int_t)(kb * 1024)));
    }
    fclose(f);
}

static json_t *cpu_info(void)
{
    json_t *cpu = json_object();
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) {
                    c++;
                    while (*c == ' ')
                        c++;
                    c[strcspn(c, "\n")] = 0;
                    json_object_set_new(cpu, "model", json_string(c));
                }
                break;
            }
        fclose(f);
    }
    json_object_set_new(cpu, "online", json_integer(sysconf(_SC_NPROCESSORS_ONLN)));
    json_object_set_new(cpu, "configured", json_integer(sysconf(_SC_NPROCESSORS_CONF)));
    return cpu;
}

/* /sys/devices/system/node/nodeN: cpulist and MemTotal per node. */
static json_t *numa_info(void)
{
    json_t *nodes = json_array();
    DIR *d = opendir("/sys/devices/system/node");
    if (!d)
        return nodes;
    struct dirent *de;
    int ids[1024], n = 0;
    while ((de = readdir(d)) && n < 1024)
        if (!strncmp(de->d_name, "node", 4) && isdigit((unsigned char)de->d_name[4]))
            ids[n++] = atoi(de->d_name + 4);
    closedir(d);
    for (int i = 1; i < n; i++)     /* sort ids */
        for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            int x = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = x;
        }
    for (int i = 0; i < n; i++) {
        json_t *node = json_object();
        json_object_set_new(node, "node", json_integer(ids[i]));
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", ids[i]);
        char *cl = read_line(path);
        json_object_set_new(node, "cpus", json_string(cl ? cl : ""));
        free(cl);
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", ids[i]);
        FILE *f = fopen(path, "re");
        if (f) {
            char line[256];
            while (fgets(line, sizeof line, f)) {
                unsigned long long kb;
                char *m = strstr(line, "MemTotal:");
                if (m && sscanf(m, "MemTotal: %llu kB", &kb) == 1)
                    json_object_set_new(node, "memory_bytes", json_integer((json_int_t)(kb * 1024)));
            }
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/distance", ids[i]);
        char *dist = read_line(path);
        if (dist)
            json_object_set_new(node, "distance", json_string(dist));
        free(dist);
        json_array_append_new(nodes, node);
    }
    return nodes;
}

void fk_sysinfo_json(json_t *o)
{
    char host[256] = "unknown";
    if (gethostname(host, sizeof host - 1) < 0)
        strcpy(host, "unknown");
    host[sizeof host - 1] = 0;
    json_object_set_new(o, "host", json_string(host));
    struct utsname u;
    if (uname(&u) == 0) {
        json_t *k = json_object();
        json_object_set_new(k, "sysname", json_string(u.sysname));
        json_object_set_new(k, "release", json_string(u.release));
        json_object_set_new(k, "version", json_string(u.version));
        json_object_set_new(k, "machine", json_string(u.machine));
        json_object_set_new(o, "kernel", k);
    }
    json_t *os = json_object();
    os_release(os);
    json_object_set_new(o, "os", os);
    json_object_set_new(o, "cpu", cpu_info());
    json_t *mem = json_object();
    meminfo(mem);
    json_object_set_new(o, "memory", mem);
    json_object_set_new(o, "numa", numa_info());
}
