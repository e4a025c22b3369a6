/* How late a thread wakes from a timerfd on this machine: the floor under
 * loadrig's send lag (docs/explanations/measurement.md section 2). Every 100 us for N wake-ups
 * it sleeps on a timerfd armed SPIN us before the instant, in epoll_wait as
 * loadrig's reactor does, spins the rest, and records how late it ran. It
 * prints p50, p99, p99.9 and the maximum in microseconds. With "awake" it
 * first asks the kernel for a CPU wake-up latency of 0 (what --awake does),
 * held until it exits.
 *
 * usage: wake N SPIN_US [awake] */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "awake") != 0)) {
        fprintf(stderr, "usage: wake N SPIN_US [awake]\n");
        return 2;
    }
    if (argc == 4) {
        /* A PM QoS request: a binary s32 in microseconds, in force while
         * the file stays open. */
        int32_t zero = 0;
        int qos = open("/dev/cpu_dma_latency", O_WRONLY);
        if (qos < 0 || write(qos, &zero, sizeof zero) != sizeof zero) {
            perror("wake: /dev/cpu_dma_latency");
            return 2;
        }
    }
    int n = atoi(argv[1]);
    long long spin = atoll(argv[2]) * 1000;
    if (n < 1000) {
        fprintf(stderr, "wake: N must be at least 1000\n");
        return 2;
    }
    long long *late = malloc(sizeof *late * (size_t)n);
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (!late || fd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        perror("wake");
        return 2;
    }
    long long first = now_ns() + 1000000;
    for (int i = 0; i < n; i++) {
        long long due = first + i * 100000LL, arm = due - spin;
        if (arm > now_ns()) {
            struct itimerspec at = {0};
            at.it_value.tv_sec = arm / 1000000000LL;
            at.it_value.tv_nsec = arm % 1000000000LL;
            uint64_t fired;
            if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &at, NULL) != 0 ||
                epoll_wait(ep, &ev, 1, -1) != 1 || read(fd, &fired, sizeof fired) != sizeof fired) {
                perror("wake");
                return 2;
            }
        }
        while (now_ns() < due) {
        }
        late[i] = now_ns() - due;
    }
    qsort(late, (size_t)n, sizeof *late, by_value);
    printf("p50 %lld p99 %lld p99.9 %lld max %lld us\n", late[n / 2] / 1000,
           late[n * 99 / 100] / 1000, late[n * 999 / 1000] / 1000, late[n - 1] / 1000);
    return 0;
}
