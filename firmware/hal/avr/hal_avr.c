/*
 * ATmega2560 at 16 MHz. Servo channels 0-11: hardware PWM from the output-compare pins of
 * the 16-bit timers 1, 3, 4, 5 (fast PWM, TOP = ICRn, 0.5 us ticks, 20 ms period).
 * Channels 12-15: PA0-PA3, sequenced in 3 ms slots by timer 2; its compare interrupt fires
 * a little early and waits for the exact tick, so edges do not depend on interrupt latency.
 * Timer 1 overflows also count the microsecond clock. USART0: interrupt-driven rings.
 * Debug output PK0 (Mega A8): high while a main-loop pass runs, low from hal_idle() on, so
 * its high times are the pass times (a scope, or simavr_runner --loop-pin K0). PF0 (A0)
 * toggles at every byte USART0 receives: its edges time the input on the MCU clock (a
 * scope, or simavr_runner --vcd ... --trace F0). Nothing else writes port F, so the toggle
 * (one write to PINF) never races a read-modify-write of the main loop.
 * ADC: channel k's feedback on ADCk (port F: ADC0-7, port K: ADC8-15), AVcc reference,
 * 125 kHz ADC clock (104 us a conversion), one conversion after the other by interrupt over
 * the selected channels. PF0 and PK0 are also the debug pins: a channel with feedback on
 * ADC0 or ADC8 takes its pin back as an analog input and that debug output stops.
 */
#include <avr/eeprom.h>
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/sleep.h>
#include <avr/wdt.h>
#include <util/atomic.h>

#include "../hal.h"

#ifndef BAUD
#define BAUD 115200
#endif
#define BAUD_TOL 3 /* 115200 at 16 MHz: +2.1 %, as on every Arduino Mega */
#include <util/setbaud.h>

#define PWM_TOP 39999u       /* 20 ms in 0.5 us ticks */
#define HW_CHANNELS 12u
#define SOFT_CHANNELS 4u
#define SOFT_PORT PORTA
#define SOFT_DDR DDRA
#define SOFT_SLOT 6000u      /* ticks per software channel slot (3 ms) */
#define SOFT_FRAME 40000u    /* ticks per software frame (20 ms) */
#define SOFT_EARLY 64u       /* the compare fires this many ticks (32 us) before the edge:
                              * room for other interrupts and atomic blocks to finish */
#define SOFT_GUARD 32u       /* keep the compare point clear of the ISR's own run time */
#define RX_SIZE 128u
#define TX_SIZE 256u         /* uint8_t indices wrap by themselves */
#define LOOP_PORT PORTK      /* main-loop busy pin, PK0 */
#define LOOP_DDR DDRK
#define LOOP_BIT PK0
#define RX_PIN PINF          /* received-byte pin, PF0: writing 1 to PINF0 toggles it */
#define RX_DDR DDRF
#define RX_BIT PF0

/* ---- boot counter: EEPROM bytes 0-3, little-endian ---- */

#define BOOT_COUNTER_ADDR ((uint32_t *)0)

static uint32_t boot_id;

/* Read, increment and write back the boot counter; erased (0xFFFFFFFF) or 0 starts at 1. */
static void boot_count(void)
{
    uint32_t last = eeprom_read_dword(BOOT_COUNTER_ADDR);
    boot_id = (last == 0xFFFFFFFFul || last == 0) ? 1 : last + 1;
    eeprom_write_dword(BOOT_COUNTER_ADDR, boot_id);
}

uint32_t hal_boot_id(void)
{
    return boot_id;
}

/* ---- clock ---- */

static volatile uint32_t pwm_periods; /* timer 1 overflows, one per 20 ms */

ISR(TIMER1_OVF_vect, ISR_NOBLOCK)
{
    pwm_periods++;
}

uint32_t hal_micros(void)
{
    uint32_t periods;
    uint16_t ticks;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
    {
        periods = pwm_periods;
        ticks = TCNT1;
        if ((TIFR1 & _BV(TOV1)) && ticks < PWM_TOP / 2) {
            periods++; /* overflow happened, its interrupt has not run yet */
        }
    }
    return periods * 20000u + ticks / 2u;
}

/* ---- hardware PWM channels ---- */

static volatile uint16_t *const hw_ocr[HW_CHANNELS] = {
    &OCR1A, &OCR1B, &OCR1C, &OCR3A, &OCR3B, &OCR3C,
    &OCR4A, &OCR4B, &OCR4C, &OCR5A, &OCR5B, &OCR5C,
};
static volatile uint8_t *const hw_tccra[HW_CHANNELS] = {
    &TCCR1A, &TCCR1A, &TCCR1A, &TCCR3A, &TCCR3A, &TCCR3A,
    &TCCR4A, &TCCR4A, &TCCR4A, &TCCR5A, &TCCR5A, &TCCR5A,
};
/* COMnx1: clear on compare match, set at BOTTOM (non-inverting) */
static const uint8_t hw_com[HW_CHANNELS] = {
    _BV(COM1A1), _BV(COM1B1), _BV(COM1C1), _BV(COM3A1), _BV(COM3B1), _BV(COM3C1),
    _BV(COM4A1), _BV(COM4B1), _BV(COM4C1), _BV(COM5A1), _BV(COM5B1), _BV(COM5C1),
};

/* The timers' counters, to tell whether a channel's pulse is over. */
static volatile uint16_t *const hw_tcnt[HW_CHANNELS] = {
    &TCNT1, &TCNT1, &TCNT1, &TCNT3, &TCNT3, &TCNT3,
    &TCNT4, &TCNT4, &TCNT4, &TCNT5, &TCNT5, &TCNT5,
};
static uint16_t hw_stopping; /* channels to disconnect once their running pulse is over */
static uint16_t hw_pending;  /* channels whose new width waits for their running pulse's end */
static uint16_t hw_pending_ocr[HW_CHANNELS];

/* The pins behind them: OCnA/B/C are bits 5-7 of PORTB (timer 1) and 3-5 of PORTE, PORTH
 * and PORTL (timers 3, 4, 5). */
static volatile uint8_t *const hw_port[HW_CHANNELS] = {
    &PORTB, &PORTB, &PORTB, &PORTE, &PORTE, &PORTE,
    &PORTH, &PORTH, &PORTH, &PORTL, &PORTL, &PORTL,
};

static const uint8_t hw_pin[HW_CHANNELS] = {
    _BV(PB5), _BV(PB6), _BV(PB7), _BV(PE3), _BV(PE4), _BV(PE5),
    _BV(PH3), _BV(PH4), _BV(PH5), _BV(PL3), _BV(PL4), _BV(PL5),
};

/* The control bits sit at the same positions in timers 1, 3, 4 and 5. */
static void pwm_timer_init(volatile uint16_t *icr, volatile uint16_t *tcnt,
                           volatile uint8_t *tccra, volatile uint8_t *tccrb, uint16_t phase)
{
    *icr = PWM_TOP;
    *tccra = _BV(WGM11);                          /* mode 14: fast PWM, TOP = ICRn */
    *tccrb = _BV(WGM13) | _BV(WGM12) | _BV(CS11); /* clk/8: 0.5 us ticks */
    /* stagger the timers so pulses do not all start together; written once the clock runs:
     * simavr 1.6 starts a timer from zero when its clock is selected, whatever count was
     * written before (its four timers then pulsed within 3 us of each other); silicon keeps
     * the count either way */
    *tcnt = phase;
}

/* ---- software channels (timer 2) ---- */

static volatile uint16_t soft_ticks[SOFT_CHANNELS]; /* pulse widths, 0 = off */

static struct {
    uint8_t event;     /* pending edge: 2k = rise of channel k, 2k+1 = its fall */
    uint8_t target;    /* TCNT2 value at the pending edge */
    uint8_t port_next; /* SOFT_PORT value from the pending edge on */
    uint16_t skips;    /* compare matches to let pass before the pending edge */
    uint16_t time;     /* frame time of the pending edge [ticks] */
    uint16_t width;    /* of the pulse being sequenced [ticks] */
} soft;

/* Plan the edge after the one that just happened; d = ticks from it to the next. */
static void soft_schedule(uint16_t d)
{
    uint16_t lead = d - SOFT_EARLY;
    if ((lead & 0xffu) < SOFT_GUARD) {
        lead -= SOFT_GUARD;
    }
    uint8_t compare = (uint8_t)(soft.target + lead);
    soft.target = (uint8_t)(soft.target + d);
    soft.skips = lead >> 8;
    OCR2A = compare;
}

ISR(TIMER2_COMPA_vect)
{
    if (soft.skips) {
        soft.skips--;
        return;
    }
    while ((int8_t)(TCNT2 - soft.target) < 0) {
    }
    SOFT_PORT = soft.port_next;

    uint16_t now = soft.time;
    uint8_t next_event = (uint8_t)((soft.event + 1u) & (2u * SOFT_CHANNELS - 1u));
    uint8_t ch = next_event >> 1;
    uint16_t next;
    if (next_event & 1u) {
        next = now + soft.width;
        soft.port_next = 0;
    } else {
        next = next_event ? ch * SOFT_SLOT : SOFT_FRAME;
        soft.width = soft_ticks[ch];
        soft.port_next = soft.width ? (uint8_t)_BV(ch) : 0;
        if (!soft.width) {
            soft.width = SOFT_SLOT / 2; /* idle slot, same timing */
        }
    }
    soft.event = next_event;
    soft.time = next_event ? next : 0;
    soft_schedule(next - now);
}

static void soft_init(void)
{
    SOFT_PORT = 0;
    SOFT_DDR |= (uint8_t)((1u << SOFT_CHANNELS) - 1u);
    TCCR2A = 0;
    TCNT2 = 0;
    soft.event = 0;
    soft.time = 0;
    soft.width = SOFT_SLOT / 2;
    soft.port_next = 0;
    soft.target = 64;
    soft.skips = 0;
    OCR2A = soft.target - SOFT_EARLY;
    TIMSK2 = _BV(OCIE2A);
    TCCR2B = _BV(CS21); /* clk/8: 0.5 us ticks */
}

/* Disconnect a hardware channel's pin from its timer: the pin goes back to its port bit,
 * which is always 0. */
static void hw_disconnect(uint8_t ch)
{
    *hw_tccra[ch] &= (uint8_t)~hw_com[ch];
}

/* True when this period's pulse of a hardware channel is over and the next one is not
 * about to start: fast PWM raises the pin at BOTTOM and it is high for OCR + 1 ticks, so
 * the pin is low for certain from 2 ticks past the compare value until shortly before the
 * timer wraps (WRAP_GUARD ticks: more than the caller needs to disconnect the pin). The pin
 * level itself cannot tell: simavr 1.6 does not show compare output in PINx. */
#define WRAP_GUARD 64u
static bool hw_pulse_over(uint8_t ch)
{
    uint16_t count = *hw_tcnt[ch];
    return count >= *hw_ocr[ch] + 2u && count < PWM_TOP - WRAP_GUARD;
}

/* Disconnect a hardware channel if its pulse is over; at its match, first wait until it is
 * (at most 16 cycles). False if the pulse is running or about to start. Interrupts off. */
static bool hw_disconnect_if_over(uint8_t ch)
{
    uint16_t match = *hw_ocr[ch];
    while ((uint16_t)(*hw_tcnt[ch] - match) < 2u) {
    }
    if (!hw_pulse_over(ch)) {
        return false;
    }
    hw_disconnect(ch);
    return true;
}

/* Stop a hardware channel without a runt: between pulses at once; during a pulse (or just
 * before one) the main loop disconnects it once the pulse is over (hw_finish_after_pulses,
 * every pass): the gap between a pulse's end (2.5 ms at most) and the next period (20 ms) is
 * far longer than a main-loop pass, so that happens before the next pulse. (The timers'
 * compare interrupts could do it, but simavr 1.6 delivers them unreliably.) */
static void hw_stop_after_pulse(uint8_t ch)
{
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
    {
        if ((*hw_tccra[ch] & hw_com[ch]) && !hw_disconnect_if_over(ch)) {
            hw_stopping |= (uint16_t)(1u << ch);
        }
    }
}

/* Give a connected channel its new compare value where silicon's double-buffered OCR takes
 * it, for the next pulse: between pulses at once; during a pulse (or just before one) once
 * it is over (hw_finish_after_pulses, every pass, long before the next period). simavr 1.6
 * writes OCR at once: a pulse shortened below the count while it runs would miss its match
 * and stay high into the next period. Interrupts off. */
static void hw_write_width(uint8_t ch, uint16_t ocr)
{
    uint16_t bit = (uint16_t)(1u << ch);
    if (!(*hw_tccra[ch] & hw_com[ch]) || hw_pulse_over(ch)) {
        *hw_ocr[ch] = ocr;
        hw_pending &= (uint16_t)~bit;
    } else {
        hw_pending_ocr[ch] = ocr;
        hw_pending |= bit;
    }
}

/* Once a channel's pulse is over: give it its waiting width, or disconnect it if it is
 * stopping (never both: a width cancels a stop, a stop drops the width). */
static void hw_finish_after_pulses(void)
{
    for (uint8_t ch = 0; (hw_pending | hw_stopping) != 0 && ch < HW_CHANNELS; ch++) {
        uint16_t bit = (uint16_t)(1u << ch);
        ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
        {
            if ((hw_pending & bit) && hw_pulse_over(ch)) {
                *hw_ocr[ch] = hw_pending_ocr[ch];
                hw_pending &= (uint16_t)~bit;
            }
            if ((hw_stopping & bit) && hw_disconnect_if_over(ch)) {
                hw_stopping &= (uint16_t)~bit;
            }
        }
    }
}

void hal_servo_write(uint8_t channel, uint16_t pulse_us)
{
    if (channel < HW_CHANNELS) {
        if (pulse_us) {
            ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
            {
                hw_stopping &= (uint16_t)~(1u << channel); /* no pending stop */
                hw_write_width(channel, (uint16_t)(2u * pulse_us - 1u)); /* high OCR + 1 ticks */
                if (!(*hw_tccra[channel] & hw_com[channel])) {
                    *hw_tccra[channel] |= hw_com[channel]; /* a write reconfigures simavr's timer */
                }
            }
        } else {
            ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
            {
                hw_pending &= (uint16_t)~(1u << channel); /* its last width never goes out */
            }
            hw_stop_after_pulse(channel);
        }
    } else if (channel < HW_CHANNELS + SOFT_CHANNELS) {
        uint8_t soft_ch = (uint8_t)(channel - HW_CHANNELS);
        ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
        {
            soft_ticks[soft_ch] = (uint16_t)(2u * pulse_us);
            /* a running pulse ends at its scheduled fall; a rise already planned is dropped */
            if (!pulse_us && soft.event == 2u * soft_ch) {
                soft.port_next &= (uint8_t)~_BV(soft_ch);
            }
        }
    }
}

void hal_servo_cut(void)
{
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
    {
        /* The port bits are written (low) as well: simavr 1.6 leaves a disconnected pin at
         * its compare-output level, high inside a pulse, until its port is written; silicon
         * does not. Only here: writing a port in simavr also drives its other timer pins to
         * their port bits, which would cut pulses still running on them. */
        hw_stopping = 0;
        hw_pending = 0;
        for (uint8_t ch = 0; ch < HW_CHANNELS; ch++) {
            hw_disconnect(ch);
            *hw_port[ch] &= (uint8_t)~hw_pin[ch];
        }
        for (uint8_t ch = 0; ch < SOFT_CHANNELS; ch++) {
            soft_ticks[ch] = 0;
        }
        soft.port_next = 0;
        SOFT_PORT = 0;
    }
}

/* ---- ADC ---- */

static volatile uint16_t adc_mask;       /* channels converted, bit k: ADCk */
static volatile uint16_t adc_new;        /* channels converted since their last take */
static volatile uint16_t adc_value[16];
static uint8_t adc_channel;              /* the one being converted (ISR and idle start) */
static volatile uint8_t debug_pins = 3u; /* bit 0: PF0 toggles, bit 1: PK0 shows passes */

/* Start converting channel ch: AVcc reference, MUX5 in ADCSRB for ADC8-15. */
static void adc_start(uint8_t ch)
{
    adc_channel = ch;
    ADMUX = (uint8_t)(_BV(REFS0) | (ch & 7u));
    ADCSRB = ch >= 8 ? _BV(MUX5) : 0;
    ADCSRA = _BV(ADEN) | _BV(ADSC) | _BV(ADIE) | _BV(ADPS2) | _BV(ADPS1) | _BV(ADPS0);
}

/* Bounded: one result stored, at most 16 one-bit steps to the next selected channel. */
ISR(ADC_vect)
{
    uint8_t ch = adc_channel;
    uint16_t bit = (uint16_t)(1u << ch);
    adc_value[ch] = ADC; /* ADCL first: simavr samples the input there */
    adc_new |= bit;
    uint16_t mask = adc_mask;
    if (mask == 0) {
        ADCSRA = 0;
        return;
    }
    do {
        bit <<= 1;
        ch++;
        if (bit == 0) {
            bit = 1;
            ch = 0;
        }
    } while (!(mask & bit));
    adc_start(ch);
}

void hal_adc_select(uint16_t mask)
{
    uint8_t low = (uint8_t)mask, high = (uint8_t)(mask >> 8);
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
    {
        /* feedback pins: analog inputs, no pull-up, digital input buffer off */
        DDRF &= (uint8_t)~low;
        PORTF &= (uint8_t)~low;
        DDRK &= (uint8_t)~high;
        PORTK &= (uint8_t)~high;
        DIDR0 = low;
        DIDR2 = high;
        debug_pins = (uint8_t)((low & 1u ? 0 : 1u) | (high & 1u ? 0 : 2u));
        if (debug_pins & 1u) {
            RX_DDR |= _BV(RX_BIT);
        }
        if (debug_pins & 2u) {
            LOOP_DDR |= _BV(LOOP_BIT);
        }
        bool idle = adc_mask == 0;
        adc_new &= mask;
        adc_mask = mask;
        if (idle && mask != 0) {
            uint8_t ch = 0;
            while (!(mask & (1u << ch))) {
                ch++;
            }
            adc_start(ch);
        }
    }
}

bool hal_adc_take(uint8_t channel, uint16_t *value)
{
    uint16_t bit = (uint16_t)(1u << channel);
    bool fresh;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
    {
        fresh = adc_new & bit;
        if (fresh) {
            *value = adc_value[channel];
            adc_new &= (uint16_t)~bit;
        }
    }
    return fresh;
}

/* ---- USART0 ---- */

static volatile uint8_t rx_buf[RX_SIZE], tx_buf[TX_SIZE];
static volatile uint8_t rx_head, rx_tail, tx_head, tx_tail;
static volatile uint16_t rx_dropped;

ISR(USART0_RX_vect)
{
    uint8_t byte = UDR0;
    if (debug_pins & 1u) {
        RX_PIN = _BV(RX_BIT);
    }
    uint8_t next = (uint8_t)((rx_head + 1u) & (RX_SIZE - 1u));
    if (next == rx_tail) {
        rx_dropped++;
    } else {
        rx_buf[rx_head] = byte;
        rx_head = next;
    }
}

ISR(USART0_UDRE_vect)
{
    if (tx_head == tx_tail) {
        UCSR0B &= (uint8_t)~_BV(UDRIE0);
    } else {
        UDR0 = tx_buf[tx_tail++];
    }
}

size_t hal_uart_read(uint8_t *buf, size_t max)
{
    size_t n = 0;
    while (n < max && rx_tail != rx_head) {
        buf[n++] = rx_buf[rx_tail];
        rx_tail = (uint8_t)((rx_tail + 1u) & (RX_SIZE - 1u));
    }
    return n;
}

size_t hal_uart_tx_free(void)
{
    return (uint8_t)(tx_tail - tx_head - 1u); /* one byte read: atomic */
}

bool hal_uart_write(const uint8_t *data, size_t len)
{
    if (len > hal_uart_tx_free()) {
        return false;
    }
    uint8_t head = tx_head;
    for (size_t i = 0; i < len; i++) {
        tx_buf[head++] = data[i];
    }
    tx_head = head;
    UCSR0B |= _BV(UDRIE0);
    return true;
}

uint16_t hal_uart_rx_dropped(void)
{
    uint16_t n;
    ATOMIC_BLOCK(ATOMIC_RESTORESTATE)
    {
        n = rx_dropped;
    }
    return n;
}

/* ---- init ---- */

void hal_init(void)
{
    MCUSR = 0;
    wdt_enable(WDTO_250MS);
    boot_count();
    /* Port E also carries INT4-INT7 (all masked). Making them edge-triggered changes nothing
     * on the chip, but stops simavr polling them as low-level interrupts every cycle. */
    EICRB = _BV(ISC40) | _BV(ISC50) | _BV(ISC60) | _BV(ISC70);

    /* U2X before UBRR: simavr derives the byte time when UBRR is written */
#if USE_2X
    UCSR0A = _BV(U2X0);
#else
    UCSR0A = 0;
#endif
    UBRR0 = UBRR_VALUE;
    UCSR0C = _BV(UCSZ01) | _BV(UCSZ00); /* 8N1 */
    UCSR0B = _BV(RXEN0) | _BV(TXEN0) | _BV(RXCIE0);

    /* output-compare pins of channels 0-11 (low while their COM bits are off) */
    DDRB |= _BV(PB5) | _BV(PB6) | _BV(PB7);
    DDRE |= _BV(PE3) | _BV(PE4) | _BV(PE5);
    DDRH |= _BV(PH3) | _BV(PH4) | _BV(PH5);
    DDRL |= _BV(PL3) | _BV(PL4) | _BV(PL5);
    pwm_timer_init(&ICR1, &TCNT1, &TCCR1A, &TCCR1B, 0);
    pwm_timer_init(&ICR3, &TCNT3, &TCCR3A, &TCCR3B, 10000);
    pwm_timer_init(&ICR4, &TCNT4, &TCCR4A, &TCCR4B, 20000);
    pwm_timer_init(&ICR5, &TCNT5, &TCCR5A, &TCCR5B, 30000);
    LOOP_DDR |= _BV(LOOP_BIT);
    RX_DDR |= _BV(RX_BIT);
    TIMSK1 = _BV(TOIE1);
    soft_init();
    sei();
}

void hal_kick(void)
{
    wdt_reset();
}

/* Sleep until the next interrupt (received byte, timer), unless input is already waiting. */
void hal_idle(void)
{
    hw_finish_after_pulses();
    uint8_t loop_pin = debug_pins & 2u ? _BV(LOOP_BIT) : 0;
    LOOP_PORT &= (uint8_t)~loop_pin; /* the pass ends here */
    set_sleep_mode(SLEEP_MODE_IDLE);
    cli();
    if (rx_head == rx_tail) {
        sleep_enable();
        sei(); /* the instruction after sei runs first: no wake-up is lost */
        sleep_cpu();
        sleep_disable();
    }
    sei();
    LOOP_PORT |= loop_pin; /* the next pass starts */
}
