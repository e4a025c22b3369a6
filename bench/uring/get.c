/* What io_uring saves a load generator, measured apart from loadrig
 * (bench/uring/run, bench/README.md): C clients that differ only in how they
 * wait and do I/O. Both keep CONNS connections to a Redis, each with
 * PIPELINE GETs of a missing key in flight (each reply is "$-1\r\n", five
 * bytes), until REQUESTS replies have arrived, and print requests per
 * second and this process's CPU per request (user + system, getrusage).
 *
 *   epoll: one send and then reads on readiness per batch, as loadrig's
 *          reactor does (edge-triggered epoll, a read until EAGAIN).
 *   uring: a send and a receive per batch submitted as io_uring requests;
 *          every connection's requests ready at one time go to the kernel
 *          in one io_uring_enter, which also waits for the completions.
 *
 * usage: get epoll|uring PORT CONNS PIPELINE REQUESTS */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char GET[] = "*2\r\n$3\r\nGET\r\n$11\r\nnot:a:key:x\r\n";
#define REPLY 5
#define MAX_PIPELINE 1024

struct conn {
    int fd;
    long want; /* reply bytes still owed for the batch in flight */
    char in[REPLY * MAX_PIPELINE];
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        perror("get: connect");
        exit(2);
    }
    return fd;
}

static char *batch;
static size_t batch_len;

static long run_epoll(struct conn *c, int n, int pipeline, long requests) {
    int ep = epoll_create1(0);
    long done = 0, sent = 0;
    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev) != 0) {
            perror("get: epoll_ctl");
            exit(2);
        }
        if (send(c[i].fd, batch, batch_len, 0) != (ssize_t)batch_len) {
            perror("get: send");
            exit(2);
        }
        c[i].want = (long)REPLY * pipeline;
        sent += pipeline;
    }
    struct epoll_event evs[256];
    while (done < requests) {
        int k = epoll_wait(ep, evs, 256, -1);
        for (int e = 0; e < k; e++) {
            struct conn *x = &c[evs[e].data.u32];
            for (;;) {
                ssize_t r = recv(x->fd, x->in, sizeof x->in, 0);
                if (r < 0 && errno == EAGAIN)
                    break;
                if (r <= 0) {
                    perror("get: recv");
                    exit(2);
                }
                x->want -= r;
                if (x->want == 0) {
                    done += pipeline;
                    if (sent < requests) {
                        if (send(x->fd, batch, batch_len, 0) != (ssize_t)batch_len) {
                            perror("get: send");
                            exit(2);
                        }
                        x->want = (long)REPLY * pipeline;
                        sent += pipeline;
                    }
                }
                if ((size_t)r < sizeof x->in)
                    break; /* a short read: the socket is empty */
            }
        }
    }
    return done;
}

/* user_data: connection index << 1 | 1 for a receive, | 0 for a send. */
static void queue_batch(struct io_uring *ring, struct conn *x, uint32_t i) {
    struct io_uring_sqe *s = io_uring_get_sqe(ring);
    io_uring_prep_send(s, x->fd, batch, batch_len, 0);
    io_uring_sqe_set_data64(s, (uint64_t)i << 1);
    s->flags |= IOSQE_CQE_SKIP_SUCCESS;
    struct io_uring_sqe *r = io_uring_get_sqe(ring);
    io_uring_prep_recv(r, x->fd, x->in, sizeof x->in, 0);
    io_uring_sqe_set_data64(r, (uint64_t)i << 1 | 1);
}

static long run_uring(struct conn *c, int n, int pipeline, long requests) {
    struct io_uring ring;
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN};
    int rc = io_uring_queue_init_params((unsigned)(4 * n + 64), &ring, &p);
    if (rc < 0) {
        fprintf(stderr, "get: io_uring_queue_init: %s\n", strerror(-rc));
        exit(2);
    }
    long done = 0, sent = 0;
    for (int i = 0; i < n; i++) {
        queue_batch(&ring, &c[i], (uint32_t)i);
        c[i].want = (long)REPLY * pipeline;
        sent += pipeline;
    }
    while (done < requests) {
        rc = io_uring_submit_and_wait(&ring, 1);
        if (rc < 0) {
            fprintf(stderr, "get: io_uring_submit_and_wait: %s\n", strerror(-rc));
            exit(2);
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            uint64_t d = io_uring_cqe_get_data64(cqe);
            struct conn *x = &c[d >> 1];
            if (cqe->res <= 0) {
                fprintf(stderr, "get: %s: %s\n", d & 1 ? "recv" : "send", strerror(-cqe->res));
                exit(2);
            }
            if (!(d & 1))
                continue;
            x->want -= cqe->res;
            if (x->want > 0) {
                struct io_uring_sqe *r = io_uring_get_sqe(&ring);
                io_uring_prep_recv(r, x->fd, x->in, sizeof x->in, 0);
                io_uring_sqe_set_data64(r, d);
                continue;
            }
            done += pipeline;
            if (sent < requests) {
                queue_batch(&ring, x, (uint32_t)(d >> 1));
                x->want = (long)REPLY * pipeline;
                sent += pipeline;
            }
        }
        io_uring_cq_advance(&ring, seen);
    }
    return done;
}

int main(int argc, char **argv) {
    if (argc != 6 || (strcmp(argv[1], "epoll") && strcmp(argv[1], "uring"))) {
        fprintf(stderr, "usage: get epoll|uring PORT CONNS PIPELINE REQUESTS\n");
        return 2;
    }
    int port = atoi(argv[2]), n = atoi(argv[3]), pipeline = atoi(argv[4]);
    long requests = atol(argv[5]);
    if (n < 1 || pipeline < 1 || pipeline > MAX_PIPELINE || requests < n * (long)pipeline) {
        fprintf(stderr, "get: bad CONNS, PIPELINE or REQUESTS\n");
        return 2;
    }
    batch_len = strlen(GET) * (size_t)pipeline;
    batch = malloc(batch_len);
    struct conn *c = calloc((size_t)n, sizeof *c);
    if (!batch || !c)
        return 2;
    for (int i = 0; i < pipeline; i++)
        memcpy(batch + i * strlen(GET), GET, strlen(GET));
    for (int i = 0; i < n; i++)
        c[i].fd = dial(port);
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    double t0 = now_s();
    long done = argv[1][0] == 'e' ? run_epoll(c, n, pipeline, requests) : run_uring(c, n, pipeline, requests);
    double t1 = now_s();
    getrusage(RUSAGE_SELF, &b);
    double cpu = (b.ru_utime.tv_sec - a.ru_utime.tv_sec) + (b.ru_utime.tv_usec - a.ru_utime.tv_usec) / 1e6 +
                 (b.ru_stime.tv_sec - a.ru_stime.tv_sec) + (b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e6;
    double sys = (b.ru_stime.tv_sec - a.ru_stime.tv_sec) + (b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e6;
    printf("%.0f req/s %.3f us cpu/req %.3f us sys/req\n", done / (t1 - t0), cpu * 1e6 / done, sys * 1e6 / done);
    return 0;
}
