#include "app.h"

#include <string.h>

#include "../hal/hal.h"
#include "feedback.h"
#include "messages.h"
#include "protocol.h"
#include "servo.h"
#include "telemetry.h"
#include "watchdog.h"

/* Output state; the watchdog's trip is owned by watchdog.c. */
static bool enabled;
static bool estopped;
static uint16_t limit_mask;
static bool limit_hit; /* a target was clamped since the last report */
static uint16_t frames_ok;  /* frames acted on: known type, valid payload */
static uint16_t bad_payload; /* unknown type or a payload that does not fit */
static uint16_t tx_skipped;  /* telemetry reports skipped to keep room for replies */
static uint16_t tx_dropped;  /* replies that found the reply queue full */
static uint16_t pulse_us[SERVO_CHANNELS];
static proto_parser_t parser;
static proto_sender_t sender;
static bool frame_handled; /* since the last control update */
static uint32_t next_control_us; /* when the periodic update is due */
static uint32_t last_rx_us; /* clock after the read of the pass that took the latest byte */
/* The heavy jobs, the 5 ms update and a report, wait for a pass without other work, but
 * not for long: the update at most one pass behind a frame, a report two passes. */
#define REPORT_WAITS 2u
static bool update_waited;   /* the due 5 ms update waited one pass behind a frame */
static uint8_t report_waits; /* passes the due report has waited */

/* Outputs follow frames at once, and time every 5 ms: CONTROL_LEAD_US before each pulse slot
 * of the clock (hal.h), so that the pulses starting there carry the command of that moment,
 * not of an update up to 5 ms older (a pass of the update and one waiting before it fit in
 * the lead). */
#define CONTROL_PERIOD_US HAL_PULSE_SLOT_US
#define CONTROL_LEAD_US 2500u
#define T_GAP_US 2000u          /* inter-frame timeout (PROTOCOL.md) */
#define RX_PER_PASS 32u         /* received bytes parsed per main-loop pass, at most */
#define REPLY_QUEUE 4u          /* replies waiting for room in the transmit buffer */

/* Replies (PONG, ERROR) not yet in the transmit buffer, oldest first. */
static struct {
    uint8_t type, len;
    uint8_t payload[MSG_PONG_LEN]; /* the largest reply */
} replies[REPLY_QUEUE];
static uint8_t reply_first, reply_count;

/* Bytes on the wire of a frame with a payload of len bytes. */
static size_t frame_size(uint8_t len)
{
    return PROTO_HEADER_LEN + len + PROTO_CRC_LEN + (sender.key ? PROTO_AUTH_LEN : 0);
}

/* Encode (SEQ, COUNTER) and queue a frame the transmit buffer has room for. */
static void send_frame(uint8_t type, const uint8_t *payload, uint8_t len)
{
    uint8_t frame[PROTO_MAX_FRAME];
    size_t n = protocol_encode(&sender, type, payload, len, frame);
    (void)hal_uart_write(frame, n); /* cannot fail: the caller checked the room */
}

/* Move waiting replies into the transmit buffer, in order, while they fit. */
static void flush_replies(void)
{
    while (reply_count > 0 && hal_uart_tx_free() >= frame_size(replies[reply_first].len)) {
        send_frame(replies[reply_first].type, replies[reply_first].payload,
                   replies[reply_first].len);
        reply_first = (uint8_t)((reply_first + 1u) % REPLY_QUEUE);
        reply_count--;
    }
}

static void send_reply(uint8_t type, const uint8_t *payload, uint8_t len)
{
    if (reply_count == REPLY_QUEUE) {
        tx_dropped++;
        return;
    }
    uint8_t slot = (uint8_t)((reply_first + reply_count) % REPLY_QUEUE);
    replies[slot].type = type;
    replies[slot].len = len;
    memcpy(replies[slot].payload, payload, len);
    reply_count++;
    flush_replies();
}

static void send_error(uint8_t code, const proto_frame_t *f)
{
    uint8_t payload[4];
    msg_error_t e = {.code = code, .type = f->type, .seq = f->seq};
    send_reply(MSG_ERROR, payload, msg_encode_error(&e, payload));
}

static bool pulses_on(void)
{
    return enabled && !estopped && !(watchdog_tripped() && watchdog_action() == WATCHDOG_LIMP);
}

static void set_targets(const msg_set_targets_t *m, uint32_t now, const proto_frame_t *f)
{
    if (estopped || watchdog_tripped()) {
        send_error(ERR_NOT_ARMED, f);
        return;
    }
    /* while disabled, targets are preloaded: the first pulse after enable goes there */
    uint16_t clamped = servo_set_targets(m->first, m->count, m->target_cdeg,
                                         enabled ? m->duration_ms : 0, now);
    uint16_t addressed = (uint16_t)((((uint32_t)1 << m->count) - 1u) << m->first);
    limit_mask = (uint16_t)((limit_mask & ~addressed) | clamped);
    limit_hit = limit_hit || clamped != 0;
}

static void set_enabled(bool on, uint32_t now)
{
    enabled = on;
    if (on) {
        estopped = false;
        watchdog_arm(now);
    } else {
        watchdog_disarm();
    }
}

/* E-stop: every output low at once, running pulses cut. */
static void estop(uint32_t now)
{
    estopped = true;
    set_enabled(false, now);
    hal_servo_cut();
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        pulse_us[ch] = 0;
    }
}

/* Act on one frame that passed CRC, MAC and replay checks. */
static bool dispatch(const proto_frame_t *f, uint32_t now)
{
    switch (f->type) {
    case MSG_PING: {
        msg_ping_t ping;
        if (!msg_decode_ping(f, &ping)) {
            return false;
        }
        uint8_t payload[MSG_PONG_LEN];
        msg_pong_t pong = {.host_time_us = ping.host_time_us,
                           .mcu_time_us = hal_micros(),
                           .boot_id = sender.boot_id};
        send_reply(MSG_PONG, payload, msg_encode_pong(&pong, payload));
        frames_ok++;
        return true;
    }
    case MSG_SET_TARGETS: {
        msg_set_targets_t m;
        if (!msg_decode_set_targets(f, &m)) {
            return false;
        }
        set_targets(&m, now, f);
        break;
    }
    case MSG_CONFIG_CHANNEL: {
        msg_config_channel_t m;
        if (!msg_decode_config_channel(f, &m) || !servo_configure(m.channel, &m.cal)) {
            return false;
        }
        break;
    }
    case MSG_CONFIG_FEEDBACK: {
        msg_config_feedback_t m;
        if (!msg_decode_config_feedback(f, &m) ||
            !feedback_configure(m.channel, m.on ? &m.cal : NULL)) {
            return false;
        }
        break;
    }
    case MSG_CONFIG_SYSTEM: {
        msg_config_system_t m;
        if (!msg_decode_config_system(f, &m)) {
            return false;
        }
        watchdog_configure(m.watchdog_ms, (watchdog_action_t)m.watchdog_action);
        telemetry_configure(m.telemetry_period_ms, now);
        servo_set_speed(m.servo_speed_cdeg_s);
        break;
    }
    case MSG_ENABLE: {
        bool on;
        if (!msg_decode_enable(f, &on)) {
            return false;
        }
        set_enabled(on, now);
        break;
    }
    case MSG_ESTOP:
        if (f->len != 0) {
            return false;
        }
        estop(now);
        break;
    default:
        send_error(ERR_UNKNOWN_TYPE, f);
        bad_payload++;
        return true;
    }
    watchdog_feed(now); /* every valid command except ping */
    frames_ok++;
    return true;
}

static void on_frame(void *ctx, const proto_frame_t *f)
{
    (void)ctx;
    frame_handled = true;
    if (!dispatch(f, hal_micros())) {
        bad_payload++;
        send_error(ERR_BAD_PAYLOAD, f);
    }
}

static uint16_t flags(void)
{
    return (uint16_t)((enabled ? FLAG_ENABLED : 0) | (estopped ? FLAG_ESTOP : 0) |
                      (watchdog_tripped() ? FLAG_WATCHDOG_TRIPPED : 0) |
                      (limit_hit ? FLAG_LIMIT_HIT : 0) |
                      (parser.key ? FLAG_AUTHENTICATED : 0) |
                      (watchdog_action() == WATCHDOG_LIMP ? FLAG_WATCHDOG_LIMP : 0) |
                      (servo_moving() ? FLAG_MOVING : 0));
}

static void report(uint32_t now)
{
    /* replies first: a report goes out only behind no waiting reply and if two of the
     * largest replies still fit after it */
    size_t room = frame_size(MSG_TELEMETRY_LEN) + 2 * frame_size(MSG_PONG_LEN);
    if (reply_count > 0 || hal_uart_tx_free() < room) {
        tx_skipped++;
        return;
    }
    const proto_counters_t *c = &parser.counters;
    const uint16_t counters[CNT_COUNT] = {
        [CNT_FRAMES_OK] = frames_ok,          [CNT_BAD_CRC] = c->bad_crc,
        [CNT_BAD_LENGTH] = c->bad_length,     [CNT_BAD_AUTH] = c->bad_auth,
        [CNT_REPLAYED] = c->replayed,         [CNT_BAD_PAYLOAD] = bad_payload,
        [CNT_RX_DROPPED] = hal_uart_rx_dropped(), [CNT_RX_TIMEOUTS] = c->rx_timeouts,
        [CNT_TX_SKIPPED] = tx_skipped,        [CNT_TX_DROPPED] = tx_dropped,
    };
    msg_telemetry_t t;
    telemetry_collect(&t, now, flags(), limit_mask, counters, pulse_us);
    uint8_t payload[PROTO_MAX_PAYLOAD];
    send_frame(MSG_TELEMETRY, payload, msg_encode_telemetry(&t, payload));
    limit_hit = false;
}

void app_init(const uint8_t *key)
{
    uint32_t now = hal_micros();
    enabled = false;
    estopped = false;
    limit_mask = 0;
    limit_hit = false;
    frames_ok = 0;
    bad_payload = 0;
    tx_skipped = 0;
    tx_dropped = 0;
    reply_first = 0;
    reply_count = 0;
    servo_init(now);
    feedback_init(now);
    watchdog_configure(500, WATCHDOG_HOLD);
    watchdog_disarm();
    telemetry_configure(20, now);
    uint32_t boot_id = hal_boot_id();
    protocol_parser_init(&parser, key, PROTO_DIR_TO_MCU, boot_id, on_frame, NULL);
    frame_handled = false;
    next_control_us = now - now % CONTROL_PERIOD_US + (CONTROL_PERIOD_US - CONTROL_LEAD_US);
    if ((int32_t)(next_control_us - now) <= 0) {
        next_control_us += CONTROL_PERIOD_US;
    }
    last_rx_us = now;
    update_waited = false;
    report_waits = 0;
    sender = (proto_sender_t){.key = key, .dir = PROTO_DIR_TO_HOST, .boot_id = boot_id};
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        pulse_us[ch] = 0;
        hal_servo_write(ch, 0);
    }
}

/* Pulses at now; every CONTROL_PERIOD_US (periodic) also the watchdog and the
 * interpolation, which otherwise run only if a frame changed the servo inputs (a
 * SET_TARGETS brings the commands up to date itself). */
static void control(uint32_t now, bool periodic)
{
    if (periodic) {
        if (watchdog_poll(now) && watchdog_action() == WATCHDOG_HOLD) {
            servo_hold(now);
        }
        do { /* the next slot's lead, past any a stalled loop missed */
            next_control_us += CONTROL_PERIOD_US;
        } while ((int32_t)(now - next_control_us) >= 0);
    }
    if (periodic || servo_changed()) {
        servo_update(now);
    }
    bool on = pulses_on();
    for (uint8_t ch = 0; ch < SERVO_CHANNELS; ch++) {
        uint16_t p = on ? servo_pulse_us(ch, servo_command_cdeg(ch)) : 0;
        if (p != pulse_us[ch]) {
            pulse_us[ch] = p;
            hal_servo_write(ch, p);
        }
    }
    frame_handled = false;
}

/* Bounded work: at most RX_PER_PASS bytes parsed (PROTOCOL.md, "Flood behaviour"), the
 * pulses after a frame, one feedback filter step, the waiting replies, and one heavy job
 * (the 5 ms update or a report) unless one has waited its limit; then the watchdog kick. */
void app_step(void)
{
    uint8_t rx[RX_PER_PASS];
    size_t n = hal_uart_read(rx, sizeof rx);
    uint32_t now = hal_micros(); /* after the read: no earlier than any byte it took */
    if (n > 0) {
        protocol_feed(&parser, rx, n);
        last_rx_us = now;
    } else if (protocol_held(&parser) && now - last_rx_us >= T_GAP_US) {
        protocol_timeout(&parser);
    }
    now = hal_micros();
    feedback_update(now);
    bool frame = frame_handled;
    bool update_due = (int32_t)(now - next_control_us) >= 0;
    bool periodic = update_due && (!frame || update_waited);
    update_waited = update_due && !periodic;
    if (frame || periodic) {
        control(now, periodic);
    }
    flush_replies();
    if ((frame || periodic) && report_waits < REPORT_WAITS) {
        report_waits = (uint8_t)(report_waits + telemetry_pending(now));
    } else if (telemetry_due(now)) {
        report(now);
        report_waits = 0;
    }
    hal_kick();
    hal_idle();
}
