/* The whole core (core/app) against a scripted HAL: frames in, pulses and frames out. */
#include <string.h>

#include "../core/app.h"
#include "../core/bytes.h"
#include "../core/messages.h"
#include "../core/protocol.h"
#include "check.h"
#include "fake_hal.h"

static proto_sender_t host;
static uint16_t next_seq; /* of the firmware's next frame: every SEQ must arrive in order */

typedef struct {
    int pongs, telemetry, errors, seq_gaps;
    msg_pong_t pong;
    msg_error_t error;
    uint8_t telemetry_payload[PROTO_MAX_PAYLOAD];
} replies_t;

static void start(void)
{
    fake_reset();
    host = (proto_sender_t){.dir = PROTO_DIR_TO_MCU};
    next_seq = 0;
    app_init(NULL);
    app_step();
}

static void send(uint8_t type, const uint8_t *payload, uint8_t len)
{
    uint8_t frame[PROTO_MAX_FRAME];
    fake_rx(frame, protocol_encode(&host, type, payload, len, frame));
    app_step();
}

static void enable(bool on)
{
    const uint8_t payload[1] = {on};
    send(MSG_ENABLE, payload, 1);
}

static void set_target(uint8_t channel, int16_t cdeg, uint16_t duration_ms)
{
    uint8_t payload[5];
    put_u16(payload, duration_ms);
    payload[2] = channel;
    put_u16(payload + 3, (uint16_t)cdeg);
    send(MSG_SET_TARGETS, payload, sizeof payload);
}

static void config_system(uint16_t watchdog_ms, uint8_t action)
{
    uint8_t payload[7];
    put_u16(payload, watchdog_ms);
    payload[2] = action;
    put_u16(payload + 3, 20);
    put_u16(payload + 5, 0);
    send(MSG_CONFIG_SYSTEM, payload, sizeof payload);
}

/* The clock moves on; a pass, and the next one (timer 2 wakes the MCU every 128 us): a
 * report that fell due in a pass that updated the outputs goes out in the next. */
static void advance_ms(uint32_t ms)
{
    fake_now_us += ms * 1000u;
    app_step();
    app_step();
}

static void collect(void *ctx, const proto_frame_t *f)
{
    replies_t *r = ctx;
    r->seq_gaps += (uint16_t)(f->seq - next_seq);
    next_seq = (uint16_t)(f->seq + 1u);
    if (f->type == MSG_PONG) {
        r->pongs++;
        r->pong.host_time_us = get_u64(f->payload);
        r->pong.mcu_time_us = get_u32(f->payload + 8);
        r->pong.boot_id = get_u32(f->payload + MSG_PONG_BOOT_ID);
    } else if (f->type == MSG_TELEMETRY) {
        r->telemetry++;
        memcpy(r->telemetry_payload, f->payload, f->len);
    } else if (f->type == MSG_ERROR) {
        r->errors++;
        r->error = (msg_error_t){f->payload[0], f->payload[1], get_u16(f->payload + 2)};
    }
}

/* Everything the firmware sent since the last call (the transmit buffer drains). */
static replies_t replies(void)
{
    replies_t r = {0};
    proto_parser_t p;
    protocol_parser_init(&p, NULL, PROTO_DIR_TO_HOST, fake_boot_id, collect, &r);
    protocol_feed(&p, fake_tx, fake_tx_len);
    fake_tx_len = 0;
    return r;
}

static uint16_t last_flags(const replies_t *r)
{
    return get_u16(r->telemetry_payload + 4);
}

static void boots_without_pulses(void)
{
    start();
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        CHECK_EQ(fake_pulse_us[ch], 0);
    }
    set_target(3, 4500, 0); /* preloaded while disabled */
    CHECK_EQ(fake_pulse_us[3], 0);
    enable(true);
    CHECK_EQ(fake_pulse_us[3], 2000);
    CHECK_EQ(fake_pulse_us[0], 1500);
    advance_ms(20);
    replies_t r = replies();
    CHECK(r.telemetry >= 1);
    CHECK(last_flags(&r) & FLAG_ENABLED);
    CHECK_EQ(get_u16(r.telemetry_payload + MSG_TELEMETRY_ARRAYS + 2 * SERVO_CHANNELS + 2 * 3), 2000);
}

static void estop_latches_until_enable(void)
{
    start();
    enable(true);
    set_target(0, 9000, 0);
    CHECK_EQ(fake_pulse_us[0], 2500);
    send(MSG_ESTOP, NULL, 0);
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        CHECK_EQ(fake_pulse_us[ch], 0);
    }
    replies(); /* drop what came before */
    set_target(0, 0, 0);
    advance_ms(20);
    replies_t r = replies();
    CHECK_EQ(r.errors, 1);
    CHECK_EQ(r.error.code, ERR_NOT_ARMED);
    CHECK(last_flags(&r) & FLAG_ESTOP);
    CHECK_EQ(fake_pulse_us[0], 0);
    enable(true);
    CHECK_EQ(fake_pulse_us[0], 2500);
}

static void watchdog_limp(void)
{
    start();
    config_system(100, 1);
    enable(true);
    set_target(1, -4500, 0);
    advance_ms(99);
    CHECK_EQ(fake_pulse_us[1], 1000);
    advance_ms(6); /* checked every control period (5 ms) */
    CHECK_EQ(fake_pulse_us[1], 0);
    advance_ms(20);
    replies_t r = replies();
    CHECK(last_flags(&r) & FLAG_WATCHDOG_TRIPPED);
    enable(true);
    CHECK_EQ(fake_pulse_us[1], 1000);
}

static void watchdog_hold_freezes_motion(void)
{
    start();
    config_system(100, 0);
    enable(true);
    set_target(0, 9000, 1000); /* 1500 -> 2500 us over 1 s */
    advance_ms(50);
    advance_ms(51); /* trips here, 10 % of the way */
    uint16_t held = fake_pulse_us[0];
    CHECK(held > 1500 && held < 1700);
    advance_ms(500);
    CHECK_EQ(fake_pulse_us[0], held);
    advance_ms(20);
    replies_t r = replies();
    CHECK(last_flags(&r) & FLAG_WATCHDOG_TRIPPED);
}

static void ping_answers_pong(void)
{
    start();
    uint8_t payload[8];
    put_u64(payload, 0x1122334455667788ull);
    send(MSG_PING, payload, 8);
    replies_t r = replies();
    CHECK_EQ(r.pongs, 1);
    CHECK(r.pong.host_time_us == 0x1122334455667788ull);
    CHECK_EQ(r.pong.mcu_time_us, fake_now_us);
    CHECK_EQ(r.pong.boot_id, fake_boot_id);
}

static void bad_frames_counted_not_acted_on(void)
{
    start();
    const uint8_t bad_enable[1] = {2};
    send(MSG_ENABLE, bad_enable, 1);
    uint8_t frame[PROTO_MAX_FRAME];
    const uint8_t on[1] = {1};
    size_t n = protocol_encode(&host, MSG_ENABLE, on, 1, frame);
    frame[n - 1] ^= 0x40; /* corrupt CRC */
    fake_rx(frame, n);
    send(0x33, NULL, 0); /* unknown type */
    advance_ms(20);
    replies_t r = replies();
    CHECK_EQ(fake_pulse_us[0], 0);
    CHECK(!(last_flags(&r) & FLAG_ENABLED));
    CHECK_EQ(r.errors, 2);
    const uint8_t *counters = r.telemetry_payload + MSG_TELEMETRY_COUNTERS;
    /* each frame counts in one counter: the bad payload and the unknown type are not ok */
    CHECK_EQ(get_u16(counters + 2 * CNT_FRAMES_OK), 0);
    CHECK_EQ(get_u16(counters + 2 * CNT_BAD_CRC), 1);
    CHECK_EQ(get_u16(counters + 2 * CNT_BAD_PAYLOAD), 2);
}

static void ping(void)
{
    uint8_t payload[8] = {0};
    send(MSG_PING, payload, 8);
}

static void set_targets2(uint8_t first, int16_t a, int16_t b)
{
    uint8_t payload[7];
    put_u16(payload, 0);
    payload[2] = first;
    put_u16(payload + 3, (uint16_t)a);
    put_u16(payload + 5, (uint16_t)b);
    send(MSG_SET_TARGETS, payload, sizeof payload);
}

static uint16_t last_limit_mask(void)
{
    advance_ms(20);
    replies_t r = replies();
    CHECK(r.telemetry >= 1);
    return get_u16(r.telemetry_payload + 6);
}

/* Bit i: channel i's latest target was clamped; a frame updates only the channels it sets. */
static void limit_mask_per_channel(void)
{
    start();
    set_targets2(3, 9500, -9500); /* default limits +-90 deg: both clamped */
    CHECK_EQ(last_limit_mask(), 0x0018);
    set_target(3, 4500, 0); /* channel 3 in range, channel 4 still clamped */
    CHECK_EQ(last_limit_mask(), 0x0010);
    set_targets2(14, 0, -9001);
    CHECK_EQ(last_limit_mask(), 0x8010);
}

/* PONG and ERROR wait for room; telemetry goes only with room for two replies after it, and
 * SEQ counts frames that entered the transmit buffer, so the host sees no gap. */
static void replies_before_telemetry(void)
{
    start();
    replies();
    fake_tx_room = 172; /* a telemetry report (102 bytes), then room for 3 pongs (23 each) */
    advance_ms(20);
    CHECK_EQ(fake_tx_len, 102);
    ping();
    ping();
    ping();
    CHECK_EQ(fake_tx_len, 171);
    ping(); /* no room: waits in the reply queue */
    CHECK_EQ(fake_tx_len, 171);
    advance_ms(20); /* a report is due, but a reply waits: skipped */
    CHECK_EQ(fake_tx_len, 171);
    replies_t r = replies(); /* the line drains */
    CHECK_EQ(r.pongs, 3);
    CHECK_EQ(r.telemetry, 1);
    app_step(); /* the waiting pong goes out */
    for (int i = 0; i < 12; i++) { /* 6 fit, 4 wait, 2 find the queue full */
        ping();
    }
    r = replies();
    CHECK_EQ(r.pongs, 7);
    CHECK_EQ(r.seq_gaps, 0);
    app_step(); /* the 4 waiting ones */
    r = replies();
    CHECK_EQ(r.pongs, 4);
    advance_ms(20);
    r = replies();
    CHECK_EQ(r.telemetry, 1);
    CHECK_EQ(r.seq_gaps, 0);
    const uint8_t *counters = r.telemetry_payload + MSG_TELEMETRY_COUNTERS;
    CHECK_EQ(get_u16(counters + 2 * CNT_TX_SKIPPED), 1);
    CHECK_EQ(get_u16(counters + 2 * CNT_TX_DROPPED), 2);
    CHECK_EQ(get_u16(counters + 2 * CNT_FRAMES_OK), 16);
}

/* A stray partial frame holds an ESTOP only until the line has been quiet for T_gap. */
static void timeout_frees_a_held_estop(void)
{
    start();
    enable(true);
    const uint8_t stray[3] = {PROTO_SYNC, PROTO_MAX_PAYLOAD_TO_MCU, MSG_PING};
    fake_rx(stray, sizeof stray);
    send(MSG_ESTOP, NULL, 0); /* inside the stray candidate's 47 bytes */
    CHECK_EQ(fake_cuts, 0);
    advance_ms(1);
    CHECK_EQ(fake_cuts, 0);
    advance_ms(1); /* 2 ms without a byte */
    CHECK_EQ(fake_cuts, 1);
    advance_ms(20);
    replies_t r = replies();
    CHECK(last_flags(&r) & FLAG_ESTOP);
    const uint8_t *counters = r.telemetry_payload + MSG_TELEMETRY_COUNTERS;
    CHECK_EQ(get_u16(counters + 2 * CNT_RX_TIMEOUTS), 1);
    CHECK_EQ(get_u16(counters + 2 * CNT_FRAMES_OK), 2);
}

/* Each pass parses at most 32 bytes and kicks the hardware watchdog once, busy or not. */
static void bounded_pass_kicks_the_watchdog(void)
{
    start();
    uint8_t flood[600];
    for (size_t i = 0; i < sizeof flood; i++) {
        flood[i] = i % 2 ? 0x28 : PROTO_SYNC; /* 55-byte candidates, one every 2 bytes */
    }
    fake_rx(flood, sizeof flood);
    int kicks = fake_kicks;
    app_step();
    CHECK_EQ(fake_rx_pending(), sizeof flood - 32);
    CHECK_EQ(fake_kicks, kicks + 1);
    while (fake_rx_pending() > 0) {
        app_step();
    }
    CHECK_EQ(fake_kicks, kicks + (int)(sizeof flood + 31) / 32);
}

/* The 5 ms update waits one pass behind a frame, a report up to two behind other work. */
static void heavy_jobs_wait_for_a_quiet_pass_but_not_long(void)
{
    start();
    replies();
    fake_now_us += 20000u; /* a report and the 5 ms update due */
    app_step();
    CHECK_EQ(replies().telemetry, 0);
    app_step(); /* the next pass (timer 2 wakes the MCU every 128 us) */
    CHECK_EQ(replies().telemetry, 1);
    fake_now_us += 20000u;
    enable(true); /* frames in three passes in a row */
    CHECK_EQ(replies().telemetry, 0);
    enable(true); /* the update waited one pass: it runs */
    CHECK_EQ(replies().telemetry, 0);
    enable(true);
    CHECK_EQ(replies().telemetry, 1); /* waited two passes: it goes out */
}

/* ENABLE(0) lets running pulses end (hal_servo_write 0); only ESTOP cuts them. */
static void disable_stops_estop_cuts(void)
{
    start();
    enable(true);
    CHECK_EQ(fake_pulse_us[0], 1500);
    enable(false);
    CHECK_EQ(fake_pulse_us[0], 0);
    CHECK_EQ(fake_cuts, 0);
    enable(true);
    send(MSG_ESTOP, NULL, 0);
    CHECK_EQ(fake_cuts, 1);
}

static void config_feedback(uint8_t channel, uint16_t adc_lo, int16_t lo, uint16_t adc_hi,
                            int16_t hi)
{
    uint8_t payload[9] = {channel};
    put_u16(payload + 1, adc_lo);
    put_u16(payload + 3, (uint16_t)lo);
    put_u16(payload + 5, adc_hi);
    put_u16(payload + 7, (uint16_t)hi);
    send(MSG_CONFIG_FEEDBACK, payload, sizeof payload);
}

static int16_t telemetry_angle(const replies_t *r, uint8_t channel)
{
    return (int16_t)get_u16(r->telemetry_payload + MSG_TELEMETRY_ARRAYS + 2 * channel);
}

/* CONFIG_FEEDBACK: a channel with feedback reports its measured angle with its
 * feedback_mask bit set; the others their estimate; nonsense is refused, off restores. */
static void feedback_in_telemetry(void)
{
    start();
    set_target(1, 3000, 0);
    advance_ms(100); /* the servo model (600 deg/s) reaches 30 deg */
    (void)replies();
    fake_adc[2] = 300;
    config_feedback(2, 100, -9000, 900, 9000);
    config_feedback(3, 500, 0, 500, 9000); /* adc_lo == adc_hi */
    uint8_t short_payload[5] = {4};
    send(MSG_CONFIG_FEEDBACK, short_payload, sizeof short_payload);
    advance_ms(20);
    replies_t r = replies();
    CHECK_EQ(r.errors, 2);
    CHECK_EQ(r.error.code, ERR_BAD_PAYLOAD);
    CHECK_EQ(r.error.type, MSG_CONFIG_FEEDBACK);
    CHECK_EQ(r.telemetry, 1);
    CHECK_EQ(get_u16(r.telemetry_payload + 8), 0x0004); /* feedback_mask */
    CHECK_EQ(telemetry_angle(&r, 2), -4500);            /* 300 counts */
    CHECK_EQ(telemetry_angle(&r, 1), 3000);             /* the estimate */
    const uint8_t off[1] = {2};
    send(MSG_CONFIG_FEEDBACK, off, sizeof off);
    advance_ms(20);
    r = replies();
    CHECK_EQ(r.errors, 0);
    CHECK_EQ(get_u16(r.telemetry_payload + 8), 0);
    CHECK_EQ(telemetry_angle(&r, 2), 0); /* its estimate again */
}

void run_app_tests(void (*run)(const char *name, void (*fn)(void)))
{
    run("boots_without_pulses", boots_without_pulses);
    run("estop_latches_until_enable", estop_latches_until_enable);
    run("watchdog_limp", watchdog_limp);
    run("watchdog_hold_freezes_motion", watchdog_hold_freezes_motion);
    run("ping_answers_pong", ping_answers_pong);
    run("bad_frames_counted_not_acted_on", bad_frames_counted_not_acted_on);
    run("limit_mask_per_channel", limit_mask_per_channel);
    run("replies_before_telemetry", replies_before_telemetry);
    run("timeout_frees_a_held_estop", timeout_frees_a_held_estop);
    run("bounded_pass_kicks_the_watchdog", bounded_pass_kicks_the_watchdog);
    run("heavy_jobs_wait_for_a_quiet_pass_but_not_long",
        heavy_jobs_wait_for_a_quiet_pass_but_not_long);
    run("disable_stops_estop_cuts", disable_stops_estop_cuts);
    run("feedback_in_telemetry", feedback_in_telemetry);
}
