/* plant_link: lock-step exchange with a physical plant process (see plant_link.h). */
#define _POSIX_C_SOURCE 200809L
#include "plant_link.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <avr_adc.h>
#include <avr_ioport.h>
#include <sim_cycle_timers.h>
#include <sim_io.h>
#include <sim_time.h>

/* The servo pins, channel by channel (hal/avr/hal_avr.c). */
static const char pin_port[PLANT_CHANNELS] = "BBBEEEHHHLLLAAAA";
static const uint8_t pin_bit[PLANT_CHANNELS] = {5, 6, 7, 3, 4, 5, 3, 4, 5, 3, 4, 5, 0, 1, 2, 3};

typedef struct {
    uint64_t tick;
    uint32_t period_us;
    uint32_t freq_hz;
    uint32_t width[PLANT_CHANNELS];
    uint32_t age[PLANT_CHANNELS];
} plant_request_t;

typedef struct {
    uint16_t millivolts[PLANT_CHANNELS];
} plant_reply_t;

_Static_assert(sizeof(plant_request_t) == 144, "the request record is 144 bytes");
_Static_assert(sizeof(plant_reply_t) == 32, "the reply record is 32 bytes");

static struct {
    avr_t *avr;
    int fd;
    uint64_t ticks;
    int high[PLANT_CHANNELS];
    avr_cycle_count_t rise[PLANT_CHANNELS], fall[PLANT_CHANNELS];
    uint32_t width[PLANT_CHANNELS];
    avr_irq_t *adc[PLANT_ADC_INPUTS];
} plant;

static void on_servo_pin(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq;
    unsigned ch = (unsigned)(uintptr_t)param;
    int level = (int)(value & 1u);
    if (level == plant.high[ch]) {
        return; /* simavr repeats levels */
    }
    plant.high[ch] = level;
    if (level) {
        plant.rise[ch] = plant.avr->cycle;
    } else if (plant.rise[ch] != 0) { /* a fall without its rise (start-up) is no pulse */
        uint64_t width = plant.avr->cycle - plant.rise[ch];
        plant.width[ch] = width > UINT32_MAX ? UINT32_MAX : (uint32_t)width;
        plant.fall[ch] = plant.avr->cycle;
    }
}

/* Move n bytes through fd whole (partial transfers continued, EINTR retried). */
static int transfer(void *buf, size_t n, int writing)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t done = writing ? write(plant.fd, p, n) : read(plant.fd, p, n);
        if (done < 0 && errno == EINTR) {
            continue;
        }
        if (done <= 0) {
            return -1;
        }
        p += done;
        n -= (size_t)done;
    }
    return 0;
}

static avr_cycle_count_t on_tick(struct avr_t *avr, avr_cycle_count_t when, void *param)
{
    (void)param;
    plant_request_t req;
    memset(&req, 0, sizeof req);
    req.tick = ++plant.ticks;
    req.period_us = PLANT_PERIOD_US;
    req.freq_hz = avr->frequency;
    for (unsigned ch = 0; ch < PLANT_CHANNELS; ch++) {
        req.width[ch] = plant.width[ch];
        uint64_t age = plant.width[ch] ? avr->cycle - plant.fall[ch] : UINT32_MAX;
        req.age[ch] = age > UINT32_MAX ? UINT32_MAX : (uint32_t)age;
    }
    plant_reply_t reply;
    errno = 0;
    if (transfer(&req, sizeof req, 1) != 0 || transfer(&reply, sizeof reply, 0) != 0) {
        fprintf(stderr, "simavr_runner: the plant process stopped answering (%s)\n",
                errno ? strerror(errno) : "closed");
        avr->state = cpu_Done;
        return 0;
    }
    for (unsigned k = 0; k < PLANT_ADC_INPUTS; k++) {
        if (reply.millivolts[k] != 0xFFFFu) {
            avr_raise_irq(plant.adc[k], reply.millivolts[k]);
        }
    }
    return when + avr_usec_to_cycles(avr, PLANT_PERIOD_US);
}

int plant_link_attach(avr_t *avr, int fd)
{
    plant.avr = avr;
    plant.fd = fd;
    for (unsigned ch = 0; ch < PLANT_CHANNELS; ch++) {
        avr_irq_t *irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(pin_port[ch]), pin_bit[ch]);
        if (irq == NULL) {
            fprintf(stderr, "simavr_runner: no port %c on this MCU for the plant\n",
                    pin_port[ch]);
            return -1;
        }
        avr_irq_register_notify(irq, on_servo_pin, (void *)(uintptr_t)ch);
    }
    for (unsigned k = 0; k < PLANT_ADC_INPUTS; k++) {
        plant.adc[k] = avr_io_getirq(avr, AVR_IOCTL_ADC_GETIRQ, ADC_IRQ_ADC0 + (int)k);
        if (plant.adc[k] == NULL) {
            fprintf(stderr, "simavr_runner: no ADC on this MCU for the plant\n");
            return -1;
        }
    }
    plant_link_reset(avr);
    return 0;
}

void plant_link_reset(avr_t *avr)
{
    if (plant.avr == NULL) {
        return;
    }
    memset(plant.high, 0, sizeof plant.high);
    memset(plant.rise, 0, sizeof plant.rise);
    memset(plant.width, 0, sizeof plant.width);
    /* registering again replaces a pending tick */
    avr_cycle_timer_register_usec(avr, PLANT_PERIOD_US, on_tick, NULL);
}

unsigned long long plant_link_ticks(void)
{
    return (unsigned long long)plant.ticks;
}
