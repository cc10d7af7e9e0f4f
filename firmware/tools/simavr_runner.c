/*
 * simavr_runner: run an unmodified ATmega2560 ELF in libsimavr.
 *
 * UART0 is exposed as a pseudo-terminal (simavr's uart_pty part); its path is printed on
 * stdout as "PTY <path>" so a caller can connect. Chosen pins are traced to a VCD file.
 * Emulation can be paced to real time and stops after a given number of emulated seconds.
 * With --loop-pin, the high times of a pin the firmware raises while its main loop works
 * (PK0 in hal/avr) are measured in CPU cycles; the runner prints "LOOP passes=N
 * max_cycles=M max_at_cycle=C p99_cycles=P median_cycles=Q mean_cycles=A" before its END line.
 *
 * Plant: with --plant-fd FD (an inherited stream socket) the 16 servo pins drive a physical
 * plant process (the servos and the robot's body), whose potentiometer voltages come back on
 * ADC0-7, in lock-step every PLANT_PERIOD_US of emulated time (4 ms, plant_link.h).
 *
 * Resets: SIGUSR1 resets the MCU (as its reset pin would); every reset, whatever its cause
 * (the signal, the MCU's own watchdog), prints "RESET n=N cycle=C cause=signal|mcu", and the
 * END line counts them (resets=N). With --eeprom FILE the EEPROM (the firmware's boot
 * counter) is loaded from FILE at start (if it exists) and written back, atomically, whenever
 * its content changed (checked every emulated millisecond), so it persists across resets
 * and runs; simavr keeps the EEPROM through a reset, as the chip does.
 *
 * Analog inputs: --adc K=MV (repeatable) holds ADCK (K = 0..7: simavr 1.6 emulates no
 * more) at MV millivolts from the start; AVcc, the firmware's ADC reference, is 5000 mV
 * (the Arduino Mega's supply). simavr converts to floor(MV * 1023 / 5000).
 *
 * Usage: simavr_runner [--vcd FILE] [--trace B5,E3,...] [--realtime] [--seconds S]
 *                      [--loop-pin K0] [--eeprom FILE] [--adc K=MV]... [--mcu NAME]
 *                      [--freq HZ] [--plant-fd FD] firmware.elf
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <avr_adc.h>
#include <avr_eeprom.h>
#include <avr_ioport.h>
#include <sim_avr.h>
#include <sim_elf.h>
#include <sim_io.h>
#include <sim_vcd_file.h>
#include <uart_pty.h>

#include "plant_link.h" /* --plant-fd: the servos and body as a physical plant */

#define PACE_INTERVAL_US 1000u /* how often emulated time is compared with the wall clock */
#define ADC_INPUTS 8u          /* ADC0-7: what simavr 1.6 emulates */
#define AVCC_MV 5000u

static volatile sig_atomic_t stop_requested, reset_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void on_reset_signal(int sig)
{
    (void)sig;
    reset_requested = 1;
}

/* Every reset goes through avr->reset (simavr's watchdog calls avr_reset too). */
static struct {
    void (*core_reset)(avr_t *avr);
    int signalled; /* the next reset is the runner's own */
    unsigned long count;
} resets;

static void on_reset(avr_t *avr)
{
    if (resets.core_reset != NULL) {
        resets.core_reset(avr);
    }
    if (avr->cycle == 0) {
        return; /* the power-on reset inside avr_init */
    }
    plant_link_reset(avr);
    resets.count++;
    printf("RESET n=%lu cycle=%llu cause=%s\n", resets.count, (unsigned long long)avr->cycle,
           resets.signalled ? "signal" : "mcu");
    fflush(stdout);
    resets.signalled = 0;
}

/* ---- EEPROM persistence ---- */

static struct {
    const char *path;
    uint8_t *mem; /* simavr's own EEPROM array */
    size_t size;
    uint8_t *saved; /* the content last written to path */
} eeprom;

static int eeprom_attach(avr_t *avr, const char *path)
{
    avr_eeprom_desc_t desc = {.ee = NULL, .offset = 0, .size = 0};
    avr_ioctl(avr, AVR_IOCTL_EEPROM_GET, &desc); /* ee NULL: a pointer to the array itself */
    if (desc.ee == NULL) {
        fprintf(stderr, "simavr_runner: this MCU has no EEPROM\n");
        return -1;
    }
    eeprom.path = path;
    eeprom.mem = desc.ee;
    eeprom.size = (size_t)avr->e2end + 1;
    eeprom.saved = malloc(eeprom.size);
    if (eeprom.saved == NULL) {
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (f != NULL) {
        size_t n = fread(eeprom.mem, 1, eeprom.size, f);
        fclose(f);
        if (n != eeprom.size) {
            fprintf(stderr, "simavr_runner: %s holds %zu bytes, not the %zu of the EEPROM\n",
                    path, n, eeprom.size);
            return -1;
        }
    } else if (errno != ENOENT) {
        fprintf(stderr, "simavr_runner: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    memcpy(eeprom.saved, eeprom.mem, eeprom.size);
    return 0;
}

/* Write the EEPROM to its file if it changed since the last write (temporary file, rename).
 * The file is the owner's alone (0600), as a keyed firmware image is. */
static void eeprom_sync(void)
{
    if (eeprom.path == NULL || memcmp(eeprom.saved, eeprom.mem, eeprom.size) == 0) {
        return;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", eeprom.path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        fchmod(fd, 0600); /* a leftover temporary file keeps its mode through O_CREAT */
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (f == NULL && fd >= 0) {
        close(fd);
    }
    if (f == NULL || fwrite(eeprom.mem, 1, eeprom.size, f) != eeprom.size || fclose(f) != 0 ||
        rename(tmp, eeprom.path) != 0) {
        fprintf(stderr, "simavr_runner: cannot write %s: %s\n", eeprom.path, strerror(errno));
        return;
    }
    memcpy(eeprom.saved, eeprom.mem, eeprom.size);
}

/* simavr's own sleep callback usleep()s every idle stretch and falls behind the wall clock;
 * this runner paces in its main loop instead (or not at all). */
static void no_sleep(avr_t *avr, avr_cycle_count_t how_long)
{
    (void)avr;
    (void)how_long;
}

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_seconds(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !stop_requested) {
    }
}

/* Parse a pin name like "B5" into port letter and bit; -1 if malformed. */
static int parse_pin(const char *tok, char *port, int *bit)
{
    if (strlen(tok) != 2 || tok[0] < 'A' || tok[0] > 'L' || tok[1] < '0' || tok[1] > '7') {
        fprintf(stderr, "simavr_runner: bad pin '%s' (want e.g. B5)\n", tok);
        return -1;
    }
    *port = tok[0];
    *bit = tok[1] - '0';
    return 0;
}

/* High times of the loop pin [cycles]: a histogram exact below LOOP_FINE, in LOOP_COARSE_BIN
 * bins up to LOOP_FINE + LOOP_COARSE * LOOP_COARSE_BIN (4.2 M cycles, 262 ms at 16 MHz);
 * longer passes land in the last bin (the maximum is exact). Memory stays bounded. */
#define LOOP_FINE 65536u
#define LOOP_COARSE 16384u
#define LOOP_COARSE_BIN 256u
static struct {
    avr_t *avr;
    int high;
    avr_cycle_count_t rise, max_at;
    uint64_t passes, total, max;
    uint32_t fine[LOOP_FINE], coarse[LOOP_COARSE];
} loop;

static void on_loop_pin(struct avr_irq_t *irq, uint32_t value, void *param)
{
    (void)irq;
    (void)param;
    if (value && !loop.high) {
        loop.rise = loop.avr->cycle;
    } else if (!value && loop.high) {
        uint64_t d = loop.avr->cycle - loop.rise;
        loop.passes++;
        loop.total += d;
        if (d > loop.max) {
            loop.max = d;
            loop.max_at = loop.rise;
        }
        if (d < LOOP_FINE) {
            loop.fine[d]++;
        } else {
            uint64_t bin = (d - LOOP_FINE) / LOOP_COARSE_BIN;
            loop.coarse[bin < LOOP_COARSE ? bin : LOOP_COARSE - 1]++;
        }
    }
    loop.high = value != 0;
}

/* The pass length [cycles] at or below which a fraction q of all passes lie (upper bin edge). */
static uint64_t loop_quantile(double q)
{
    uint64_t need = (uint64_t)(q * (double)loop.passes + 0.999999), seen = 0;
    for (uint64_t d = 0; d < LOOP_FINE; d++) {
        seen += loop.fine[d];
        if (seen >= need) {
            return d;
        }
    }
    for (uint64_t b = 0; b < LOOP_COARSE; b++) {
        seen += loop.coarse[b];
        if (seen >= need) {
            return LOOP_FINE + (b + 1) * LOOP_COARSE_BIN - 1;
        }
    }
    return loop.max;
}

static void print_loop_stats(void)
{
    printf("LOOP passes=%llu max_cycles=%llu max_at_cycle=%llu p99_cycles=%llu "
           "median_cycles=%llu mean_cycles=%.1f\n",
           (unsigned long long)loop.passes, (unsigned long long)loop.max,
           (unsigned long long)loop.max_at,
           (unsigned long long)(loop.passes ? loop_quantile(0.99) : 0),
           (unsigned long long)(loop.passes ? loop_quantile(0.5) : 0),
           loop.passes ? (double)loop.total / (double)loop.passes : 0.0);
}

/* Add every pin of a comma-separated list like "B5,E3,A0" to the VCD trace. */
static int add_traces(avr_t *avr, avr_vcd_t *vcd, const char *list)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
        char port;
        int bit;
        if (parse_pin(tok, &port, &bit) != 0) {
            return -1;
        }
        avr_irq_t *irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(port), bit);
        if (irq == NULL) {
            fprintf(stderr, "simavr_runner: no port %c on this MCU\n", port);
            return -1;
        }
        char name[8];
        snprintf(name, sizeof name, "P%s", tok);
        avr_vcd_add_signal(vcd, irq, 1, name);
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: simavr_runner [--vcd FILE] [--trace B5,E3,...] [--realtime] "
                    "[--seconds S] [--loop-pin K0] [--eeprom FILE] [--adc K=MV]... [--mcu NAME] "
                    "[--freq HZ] [--plant-fd FD] firmware.elf\n");
}

int main(int argc, char **argv)
{
    const char *vcd_path = NULL, *trace = NULL, *elf = NULL, *mcu = "atmega2560";
    const char *loop_pin = NULL, *eeprom_path = NULL;
    int plant_fd = -1;
    double seconds = 0.0;
    unsigned long freq = 16000000ul;
    int realtime = 0;
    long adc_mv[ADC_INPUTS];
    for (unsigned k = 0; k < ADC_INPUTS; k++) {
        adc_mv[k] = -1; /* not set */
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--vcd") && has_value) {
            vcd_path = argv[++i];
        } else if (!strcmp(a, "--trace") && has_value) {
            trace = argv[++i];
        } else if (!strcmp(a, "--seconds") && has_value) {
            seconds = strtod(argv[++i], NULL);
        } else if (!strcmp(a, "--loop-pin") && has_value) {
            loop_pin = argv[++i];
        } else if (!strcmp(a, "--eeprom") && has_value) {
            eeprom_path = argv[++i];
        } else if (!strcmp(a, "--adc") && has_value) {
            char *end;
            unsigned long k = strtoul(argv[++i], &end, 10);
            long mv = *end == '=' ? strtol(end + 1, &end, 10) : -1;
            if (k >= ADC_INPUTS || mv < 0 || mv > (long)AVCC_MV || *end != '\0') {
                fprintf(stderr, "simavr_runner: --adc wants K=MV, K 0..7, MV 0..%u, got %s\n",
                        AVCC_MV, argv[i]);
                return 2;
            }
            adc_mv[k] = mv;
        } else if (!strcmp(a, "--plant-fd") && has_value) {
            char *end; /* an inherited socket to the plant (plant_link.h) */
            long fd = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || fd < 0 || fd > 65535) {
                fprintf(stderr, "simavr_runner: --plant-fd wants a descriptor, got %s\n", argv[i]);
                return 2;
            }
            plant_fd = (int)fd;
        } else if (!strcmp(a, "--mcu") && has_value) {
            mcu = argv[++i];
        } else if (!strcmp(a, "--freq") && has_value) {
            freq = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--realtime")) {
            realtime = 1;
        } else if (a[0] != '-' && elf == NULL) {
            elf = a;
        } else {
            usage();
            return 2;
        }
    }
    if (elf == NULL || (trace != NULL && vcd_path == NULL)) {
        usage();
        return 2;
    }

    elf_firmware_t fw;
    memset(&fw, 0, sizeof fw);
    if (elf_read_firmware(elf, &fw) != 0) {
        fprintf(stderr, "simavr_runner: cannot read %s\n", elf);
        return 1;
    }
    avr_t *avr = avr_make_mcu_by_name(mcu);
    if (avr == NULL) {
        fprintf(stderr, "simavr_runner: unknown MCU %s\n", mcu);
        return 1;
    }
    avr_init(avr);
    fw.frequency = (uint32_t)freq;
    avr_load_firmware(avr, &fw);
    avr->frequency = (uint32_t)freq;
    avr->sleep = no_sleep;
    resets.core_reset = avr->reset;
    avr->reset = on_reset;
    if (eeprom_path != NULL && eeprom_attach(avr, eeprom_path) != 0) {
        return 1;
    }

    avr->avcc = AVCC_MV;
    for (unsigned k = 0; k < ADC_INPUTS; k++) {
        if (adc_mv[k] >= 0) { /* before the first conversion: simavr samples it then */
            avr_raise_irq(avr_io_getirq(avr, AVR_IOCTL_ADC_GETIRQ, (int)(ADC_IRQ_ADC0 + k)),
                          (uint32_t)adc_mv[k]);
        }
    }

    static uart_pty_t uart;
    uart_pty_init(avr, &uart);
    uart_pty_connect(&uart, '0');
    if (plant_fd >= 0 && plant_link_attach(avr, plant_fd) != 0) {
        return 2;
    }

    static avr_vcd_t vcd;
    if (vcd_path != NULL) {
        avr_vcd_init(avr, vcd_path, &vcd, 1000 /* flush period, us */);
        if (trace != NULL && add_traces(avr, &vcd, trace) != 0) {
            return 2;
        }
        avr_vcd_start(&vcd);
    }

    if (loop_pin != NULL) {
        char port;
        int bit;
        if (parse_pin(loop_pin, &port, &bit) != 0) {
            return 2;
        }
        avr_irq_t *irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ(port), bit);
        if (irq == NULL) {
            fprintf(stderr, "simavr_runner: no port %c on this MCU\n", port);
            return 2;
        }
        loop.avr = avr;
        avr_irq_register_notify(irq, on_loop_pin, NULL);
    }

    /* sigaction, not signal(): the handlers must stay installed after their first signal */
    struct sigaction stop = {.sa_handler = on_signal}, reset = {.sa_handler = on_reset_signal};
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGTERM, &stop, NULL);
    sigaction(SIGUSR1, &reset, NULL);
    printf("PTY %s\n", uart.pty.slavename);
    fflush(stdout);

    const avr_cycle_count_t stop_cycle =
        seconds > 0.0 ? (avr_cycle_count_t)(seconds * (double)freq) : 0;
    const avr_cycle_count_t pace_cycles = (avr_cycle_count_t)freq / (1000000u / PACE_INTERVAL_US);
    avr_cycle_count_t next_pace = pace_cycles;
    const double t0 = wall_seconds();
    int state = cpu_Running;
    while (!stop_requested && state != cpu_Done && state != cpu_Crashed) {
        state = avr_run(avr);
        if (stop_cycle != 0 && avr->cycle >= stop_cycle) {
            break;
        }
        if (reset_requested) {
            reset_requested = 0;
            resets.signalled = 1;
            avr_reset(avr);
            state = avr->state = cpu_Running;
        }
        if (avr->cycle >= next_pace) {
            next_pace = avr->cycle + pace_cycles;
            eeprom_sync();
            double ahead = (double)avr->cycle / (double)freq - (wall_seconds() - t0);
            if (realtime && ahead > 0.0) {
                sleep_seconds(ahead);
            }
        }
    }
    eeprom_sync();
    if (vcd_path != NULL) {
        avr_vcd_close(&vcd);
    }
    if (loop_pin != NULL) {
        print_loop_stats();
    }
    if (plant_fd >= 0) {
        printf("PLANT ticks=%llu\n", plant_link_ticks());
    }
    printf("END cycles=%llu emulated_s=%.6f wall_s=%.3f state=%d resets=%lu\n",
           (unsigned long long)avr->cycle, (double)avr->cycle / (double)freq,
           wall_seconds() - t0, state, resets.count);
    fflush(stdout);
    /* uart_pty_stop() can hang joining its thread: leave without it. */
    _Exit(state == cpu_Crashed ? 3 : 0);
}
