/*
 * Host build: the UART is a pseudo-terminal, the clock is CLOCK_MONOTONIC and servo
 * pulses only exist as numbers (telemetry reports them, and the servo model's estimate).
 * The boot id is the wall clock's seconds since 1970 at start-up: it grows from run to run
 * without a file (two starts within one second share an id; the host build is for tests).
 */
#define _DEFAULT_SOURCE /* cfmakeraw */
#define _XOPEN_SOURCE 600 /* posix_openpt */
#include "hal_posix.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../hal.h"

static int uart_fd = -1;
static struct timespec t0;
static uint32_t boot_id;

int hal_posix_open_pty(void)
{
    int fd = posix_openpt(O_RDWR | O_NOCTTY);
    if (fd < 0 || grantpt(fd) != 0 || unlockpt(fd) != 0) {
        return -1;
    }
    struct termios tio;
    if (tcgetattr(fd, &tio) == 0) {
        cfmakeraw(&tio);
        tcsetattr(fd, TCSANOW, &tio);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    /* keep a slave descriptor open so reads do not fail with EIO before a client opens it */
    if (open(ptsname(fd), O_RDWR | O_NOCTTY) < 0) {
        return -1;
    }
    printf("PTY %s\n", ptsname(fd));
    fflush(stdout);
    uart_fd = fd;
    return fd;
}

void hal_init(void)
{
    clock_gettime(CLOCK_MONOTONIC, &t0);
    time_t now = time(NULL);
    boot_id = now > 0 ? (uint32_t)now : 1;
}

uint32_t hal_boot_id(void)
{
    return boot_id;
}

uint32_t hal_micros(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t us = (int64_t)(now.tv_sec - t0.tv_sec) * 1000000 + (now.tv_nsec - t0.tv_nsec) / 1000;
    return (uint32_t)us;
}

size_t hal_uart_read(uint8_t *buf, size_t max)
{
    ssize_t n = read(uart_fd, buf, max);
    return n > 0 ? (size_t)n : 0;
}

/* Transmit ring, as on the MCU: frames go in whole or not at all and drain into the pty as
 * it takes them (partial writes continued, interrupted ones retried, a full pty waited out
 * by the main loop, never inside a frame). */
static uint8_t tx_buf[4096];
static size_t tx_len;

static void tx_flush(void)
{
    size_t done = 0;
    while (done < tx_len) {
        ssize_t n = write(uart_fd, tx_buf + done, tx_len - done);
        if (n > 0) {
            done += (size_t)n;
        } else if (!(n < 0 && errno == EINTR)) {
            break; /* EAGAIN: the pty is full, go on later; anything else: no reader */
        }
    }
    memmove(tx_buf, tx_buf + done, tx_len - done);
    tx_len -= done;
}

bool hal_uart_write(const uint8_t *data, size_t len)
{
    tx_flush();
    if (len > sizeof tx_buf - tx_len) {
        return false;
    }
    memcpy(tx_buf + tx_len, data, len);
    tx_len += len;
    tx_flush();
    return true;
}

size_t hal_uart_tx_free(void)
{
    tx_flush();
    return sizeof tx_buf - tx_len;
}

uint16_t hal_uart_rx_dropped(void)
{
    return 0; /* the kernel buffers the pty */
}

void hal_servo_write(uint8_t channel, uint16_t pulse_us)
{
    (void)channel;
    (void)pulse_us;
}

void hal_servo_cut(void)
{
}

void hal_adc_select(uint16_t mask)
{
    (void)mask; /* no analog inputs: every channel reports its estimate */
}

bool hal_adc_take(uint8_t channel, uint16_t *value)
{
    (void)channel;
    (void)value;
    return false;
}

void hal_kick(void)
{
}

void hal_idle(void)
{
    tx_flush();
    struct pollfd p = {.fd = uart_fd, .events = (short)(POLLIN | (tx_len ? POLLOUT : 0))};
    (void)poll(&p, 1, 1);
}
