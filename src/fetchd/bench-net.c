/* SPDX-License-Identifier: GPL-2.0-only */
/* fetch-bench's network: the servers and the clients in two network
 * namespaces of their own, joined by a veth pair, so that each side's
 * receive work runs on its own CPUs. On loopback the kernel does the
 * receiving socket's TCP work in whichever process is running when the
 * packet is sent: part of the clients' receive work was charged to the
 * server, by how the two happened to be scheduled (the socket server's
 * CPU per GiB with the pack cache moved 0.22-0.38 s from run to run while
 * server + client CPU stayed at 875-894 ms/GiB for one client fetching
 * 1.4 MiB). A veth end's receive queue with
 * RPS set to a CPU mask hands each packet to the backlog of a CPU in that
 * mask: the data the server sends is received on the clients' CPUs, the
 * clients' ACKs and requests on the servers'.
 *
 * Invariants: the namespaces live only as long as the file descriptors
 * held here and the processes inside them (servers, git, clients), so any
 * exit of fetch-bench, even SIGKILL, leaves nothing behind; the veth pair
 * is created in the initial namespace only for as long as it takes to set
 * its RPS masks (sysfs shows only the mounting namespace's devices) and is
 * deleted again if any later step fails. Every fd is close-on-exec.
 *
 * Both namespaces get one TCP congestion control, named by fetch-bench
 * (reno unless told: a namespace other than the first may take only those
 * in net.ipv4.tcp_allowed_congestion_control, and reno is always there;
 * nothing is lost on the pair, so a loss-based one never backs off), not
 * the host's default, which a new namespace inherits: on this benchmark's VM that was bbr, which paces every
 * connection with an hrtimer (tcp_pace_kick: 328,246 of the 357,541
 * timer expiries on the servers' CPU in a 100-second sweep with the pack
 * cache; 10-13 local timer interrupts per 1.4 MiB fetch, 55-120 per 10.8
 * MiB one), and its pace follows its estimates of each
 * new connection's bandwidth and RTT, which follow how fast the host is
 * just then.
 *
 * The clients' route to the servers has quickack (RTAX_QUICKACK) unless
 * --delayed-acks: a client acknowledges every segment it takes in at once.
 * With TCP's delayed ACKs a client holding more than a full segment
 * unacknowledged ACKs at once only if its window's right edge would
 * advance, i.e. if it has read what came before (else its next read
 * does): the ACKs per fetch then followed how fast the clients read
 * (44-125 per 10.8 MiB fetch with the pack cache, in states lasting tens
 * of seconds), and the socket server's CPU per fetch with them (1.1-5.1
 * ms; no delayed-ACK timer fired, hardly a backlog coalesced). With
 * quickack the count follows the server's segments. */
#include "fetchd/bench.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* RFC 2544's benchmarking range; private to the two namespaces. */
#define NET_SERVER_IP "198.18.0.1"
#define NET_CLIENT_IP "198.18.0.2"
#define NET_PREFIX 30
#define NET_NETWORK "198.18.0.0"  /* NET_SERVER_IP's and NET_CLIENT_IP's /30 */
#define NET_MTU 65535   /* veth's largest; loopback's is 65536 */

static int ns_orig = -1, ns_server = -1, ns_client = -1;

/* ---- rtnetlink ---- */

struct nlreq {
    struct nlmsghdr h;
    char buf[1024];
};

static struct rtattr *nl_attr(struct nlreq *r, unsigned short type, const void *data, size_t len)
{
    if (NLMSG_ALIGN(r->h.nlmsg_len) + RTA_SPACE(len) > sizeof *r)
        fk_die("internal error: a netlink request outgrew its buffer");
    struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->h.nlmsg_len));
    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(len);
    if (len)
        memcpy(RTA_DATA(a), data, len);
    r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
    return a;
}

/* Ends a nested attribute opened with nl_attr(r, type, NULL, 0). */
static void nl_nest_end(struct nlreq *r, struct rtattr *a)
{
    a->rta_len = (unsigned short)((char *)r + r->h.nlmsg_len - (char *)a);
}

static void nl_init(struct nlreq *r, unsigned short type, unsigned short flags, const void *hdr, size_t hlen)
{
    memset(r, 0, sizeof *r);
    r->h.nlmsg_len = (unsigned)NLMSG_LENGTH(hlen);
    r->h.nlmsg_type = type;
    r->h.nlmsg_flags = (unsigned short)(NLM_F_REQUEST | NLM_F_ACK | flags);
    memcpy(NLMSG_DATA(&r->h), hdr, hlen);
}

/* Sends r on a new rtnetlink socket of the calling thread's namespace and
 * reads its acknowledgement: 0 or a negative errno. */
static int nl_talk(struct nlreq *r)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return -errno;
    struct sockaddr_nl k = { .nl_family = AF_NETLINK };
    int rc = -EIO;
    r->h.nlmsg_seq = 1;
    if (sendto(fd, &r->h, r->h.nlmsg_len, 0, (struct sockaddr *)&k, sizeof k) != (ssize_t)r->h.nlmsg_len) {
        rc = -errno;
        goto out;
    }
    for (int tries = 0; tries < 8; tries++) {
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n))
            if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
                rc = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
                goto out;
            }
    }
out:
    close(fd);
    return rc;
}

static int link_index(const char *name)
{
    unsigned i = if_nametoindex(name);
    return i ? (int)i : -ENODEV;
}

/* The veth pair a <-> b, both in the calling thread's namespace. */
static int veth_create(const char *a, const char *b)
{
    struct nlreq r;
    struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
    unsigned mtu = NET_MTU;
    nl_init(&r, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof ifi);
    nl_attr(&r, IFLA_IFNAME, a, strlen(a) + 1);
    nl_attr(&r, IFLA_MTU, &mtu, sizeof mtu);
    struct rtattr *li = nl_attr(&r, IFLA_LINKINFO, NULL, 0);
    nl_attr(&r, IFLA_INFO_KIND, "veth", 4);
    struct rtattr *data = nl_attr(&r, IFLA_INFO_DATA, NULL, 0);
    struct rtattr *peer = nl_attr(&r, VETH_INFO_PEER, &ifi, sizeof ifi);
    nl_attr(&r, IFLA_IFNAME, b, strlen(b) + 1);
    nl_attr(&r, IFLA_MTU, &mtu, sizeof mtu);
    nl_nest_end(&r, peer);
    nl_nest_end(&r, data);
    nl_nest_end(&r, li);
    return nl_talk(&r);
}

/* RTM_NEWLINK (or RTM_DELLINK) on the existing link name: flags under
 * the mask change set, and moved to namespace nsfd when >= 0. */
static int link_change(const char *name, unsigned short type, unsigned flags, unsigned change, int nsfd)
{
    int idx = link_index(name);
    if (idx < 0)
        return idx;
    struct nlreq r;
    struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = idx, .ifi_flags = flags, .ifi_change = change };
    nl_init(&r, type, 0, &ifi, sizeof ifi);
    if (nsfd >= 0) {
        uint32_t fd = (uint32_t)nsfd;
        nl_attr(&r, IFLA_NET_NS_FD, &fd, sizeof fd);
    }
    return nl_talk(&r);
}

static int link_delete(const char *name) { return link_change(name, RTM_DELLINK, 0, 0, -1); }
static int link_move(const char *name, int nsfd) { return link_change(name, RTM_NEWLINK, 0, 0, nsfd); }
static int link_up(const char *name) { return link_change(name, RTM_NEWLINK, IFF_UP, IFF_UP, -1); }

static int addr_add(const char *name, const char *ip)
{
    int idx = link_index(name);
    if (idx < 0)
        return idx;
    struct in_addr in;
    if (inet_pton(AF_INET, ip, &in) != 1)
        return -EINVAL;
    struct nlreq r;
    struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = NET_PREFIX, .ifa_index = (unsigned)idx };
    nl_init(&r, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof ifa);
    nl_attr(&r, IFA_LOCAL, &in, sizeof in);
    nl_attr(&r, IFA_ADDRESS, &in, sizeof in);
    return nl_talk(&r);
}

/* The route the kernel made for dev's address (NET_NETWORK/NET_PREFIX, src
 * ip), replaced by the same route with quickack: every segment received
 * over it is acknowledged at once, not delayed. */
static int route_quickack(const char *dev, const char *ip)
{
    int idx = link_index(dev);
    if (idx < 0)
        return idx;
    struct in_addr net, src;
    if (inet_pton(AF_INET, NET_NETWORK, &net) != 1 || inet_pton(AF_INET, ip, &src) != 1)
        return -EINVAL;
    struct nlreq r;
    struct rtmsg rt = { .rtm_family = AF_INET, .rtm_dst_len = NET_PREFIX, .rtm_table = RT_TABLE_MAIN,
                        .rtm_protocol = RTPROT_KERNEL, .rtm_scope = RT_SCOPE_LINK, .rtm_type = RTN_UNICAST };
    uint32_t oif = (uint32_t)idx, on = 1;
    nl_init(&r, RTM_NEWROUTE, NLM_F_REPLACE, &rt, sizeof rt);
    nl_attr(&r, RTA_DST, &net, sizeof net);
    nl_attr(&r, RTA_OIF, &oif, sizeof oif);
    nl_attr(&r, RTA_PREFSRC, &src, sizeof src);
    struct rtattr *m = nl_attr(&r, RTA_METRICS, NULL, 0);
    nl_attr(&r, RTAX_QUICKACK, &on, sizeof on);
    nl_nest_end(&r, m);
    return nl_talk(&r);
}

/* ---- the pieces ---- */

/* The CPU set as the hexadecimal mask sysfs takes: 32-bit groups, most
 * significant first, comma-separated. */
static void cpu_mask_hex(const cpu_set_t *set, char *out, size_t n)
{
    int top = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, set))
            top = c;
    size_t k = 0;
    out[0] = 0;
    for (int g = top / 32; g >= 0 && k < n; g--) {
        uint32_t w = 0;
        for (int b = 0; b < 32; b++)
            if (CPU_ISSET(g * 32 + b, set))
                w |= 1u << b;
        k += (size_t)snprintf(out + k, n - k, k ? ",%08x" : "%x", w);
    }
}

/* text written to a sysfs or procfs setting in one write: 0 or a negative
 * errno (-EIO: taken in part). */
static int setting_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, text, strlen(text));
    int rc = w == (ssize_t)strlen(text) ? 0 : w < 0 ? -errno : -EIO;
    close(fd);
    return rc;
}

static int rps_set(const char *dev, const cpu_set_t *cpus)
{
    char path[128], mask[256];
    snprintf(path, sizeof path, "/sys/class/net/%s/queues/rx-0/rps_cpus", dev);
    cpu_mask_hex(cpus, mask, sizeof mask);
    return setting_write(path, mask);
}

/* A new, empty network namespace, held by an fd; the calling thread stays
 * in ns_orig. */
static int ns_new(void)
{
    if (unshare(CLONE_NEWNET) != 0)
        return -errno;
    int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    int e = errno;
    if (setns(ns_orig, CLONE_NEWNET) != 0)
        fk_die("cannot return to fetch-bench's network namespace: %s", strerror(errno));
    return fd >= 0 ? fd : -e;
}

/* The calling thread's namespace's TCP congestion control: 0 or a
 * negative errno (ENOENT: no such algorithm, or its module not loaded). */
static int tcp_cc_set(const char *name)
{
    return setting_write("/proc/sys/net/ipv4/tcp_congestion_control", name);
}

/* In namespace ns: lo and dev up, dev with address ip, TCP's congestion
 * control tcp_cc, and when quickack its route with quickack. */
static int ns_configure(int ns, const char *dev, const char *ip, const char *tcp_cc, bool quickack,
                        const char **step)
{
    if (setns(ns, CLONE_NEWNET) != 0)
        return *step = "setns", -errno;
    int rc = (*step = "lo up", link_up("lo"));
    if (rc == 0)
        rc = (*step = "address", addr_add(dev, ip));
    if (rc == 0)
        rc = (*step = "link up", link_up(dev));
    if (rc == 0)
        rc = (*step = "TCP congestion control (net.ipv4.tcp_congestion_control)", tcp_cc_set(tcp_cc));
    if (rc == 0 && quickack)
        rc = (*step = "quickack on the route", route_quickack(dev, ip));
    if (setns(ns_orig, CLONE_NEWNET) != 0)
        fk_die("cannot return to fetch-bench's network namespace: %s", strerror(errno));
    return rc;
}

static void net_close(void)
{
    int *fds[] = { &ns_server, &ns_client, &ns_orig };
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

bool bench_net_setup(const cpu_set_t *server_cpus, const cpu_set_t *client_cpus, const char *tcp_cc, char *why,
                     size_t n)
{
    char s[IFNAMSIZ], c[IFNAMSIZ];
    snprintf(s, sizeof s, "fkb%ds", (int)getpid() % 1000000);
    snprintf(c, sizeof c, "fkb%dc", (int)getpid() % 1000000);
    const char *step = "open the network namespace";
    int rc = 0;
    bool made = false;
    if ((ns_orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
        rc = -errno;
    if (rc == 0)
        rc = (step = "new network namespace", ns_server = ns_new());
    if (rc >= 0)
        rc = (ns_client = ns_new());
    if (rc >= 0) {
        rc = (step = "create the veth pair", veth_create(s, c));
        made = rc == 0;
    }
    if (rc >= 0)
        rc = (step = "RPS mask of the servers' end", rps_set(s, server_cpus));
    if (rc >= 0)
        rc = (step = "RPS mask of the clients' end", rps_set(c, client_cpus));
    if (rc >= 0)
        rc = (step = "move the servers' end", link_move(s, ns_server));
    if (rc >= 0)
        rc = (step = "move the clients' end", link_move(c, ns_client));
    if (rc >= 0)
        rc = ns_configure(ns_server, s, NET_SERVER_IP, tcp_cc, false, &step);
    if (rc >= 0)
        rc = ns_configure(ns_client, c, NET_CLIENT_IP, tcp_cc, !opt.delayed_acks, &step);
    if (rc >= 0)
        return true;
    snprintf(why, n, "%s: %s", step, strerror(-rc));
    if (made)
        (void)link_delete(s);   /* in this namespace still, or gone with the others */
    net_close();
    if (strncmp(step, "TCP congestion", 14) == 0) {     /* a bad --tcp-congestion: no sweep on another one */
        char avail[256] = "";
        FILE *f = fopen("/proc/sys/net/ipv4/tcp_allowed_congestion_control", "re");
        if (!f || !fgets(avail, sizeof avail, f))
            snprintf(avail, sizeof avail, "unknown");
        if (f)
            fclose(f);
        avail[strcspn(avail, "\n")] = 0;
        fk_die("--tcp-congestion %s: a network namespace cannot use it (%s); name one of "
               "net.ipv4.tcp_allowed_congestion_control: %s", tcp_cc, strerror(-rc), avail);
    }
    return false;
}

bool bench_net_active(void)
{
    return ns_client >= 0;
}

const char *bench_net_server_ip(void)
{
    return bench_net_active() ? NET_SERVER_IP : "127.0.0.1";
}

static void enter(int ns)
{
    if (ns >= 0 && setns(ns, CLONE_NEWNET) != 0)
        fk_die("setns into fetch-bench's network namespace: %s", strerror(errno));
}

void bench_net_enter_server(void) { enter(ns_server); }
void bench_net_enter_client(void) { enter(ns_client); }
void bench_net_leave(void) { enter(ns_orig); }

void bench_net_describe(const cpu_set_t *server_cpus, const cpu_set_t *client_cpus, char *out, size_t n)
{
    if (!bench_net_active()) {
        snprintf(out, n, "loopback (127.0.0.1)");
        return;
    }
    char a[256], b[256];
    cpu_mask_hex(server_cpus, a, sizeof a);
    cpu_mask_hex(client_cpus, b, sizeof b);
    snprintf(out, n, "veth between two network namespaces (servers %s, clients %s, MTU %d, %s, TCP "
             "congestion control %s), RPS: received on CPU mask %s by the servers' end, %s by the clients'",
             NET_SERVER_IP, NET_CLIENT_IP, NET_MTU,
             opt.delayed_acks ? "the clients' ACKs delayed as by default (--delayed-acks)"
                              : "the clients' route with quickack: every segment acknowledged at once, "
                                "not when the client has read what came before",
             opt.tcp_cc, a, b);
}
