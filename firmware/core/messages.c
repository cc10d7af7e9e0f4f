#include "messages.h"

#include "bytes.h"

bool msg_decode_ping(const proto_frame_t *f, msg_ping_t *m)
{
    if (f->len != 8) {
        return false;
    }
    m->host_time_us = get_u64(f->payload);
    return true;
}

bool msg_decode_set_targets(const proto_frame_t *f, msg_set_targets_t *m)
{
    if (f->len < 5 || (f->len - 3) % 2 != 0) {
        return false;
    }
    m->duration_ms = get_u16(f->payload);
    m->first = f->payload[2];
    m->count = (uint8_t)((f->len - 3) / 2);
    if (m->first + m->count > (int)SERVO_CHANNELS) {
        return false;
    }
    for (uint8_t i = 0; i < m->count; i++) {
        m->target_cdeg[i] = get_i16(f->payload + 3 + 2 * i);
    }
    return true;
}

bool msg_decode_config_channel(const proto_frame_t *f, msg_config_channel_t *m)
{
    if (f->len != 14) {
        return false;
    }
    const uint8_t *p = f->payload;
    m->channel = p[0];
    m->cal.direction = (int8_t)p[1];
    m->cal.zero_offset_cdeg = get_i16(p + 2);
    m->cal.min_cdeg = get_i16(p + 4);
    m->cal.max_cdeg = get_i16(p + 6);
    m->cal.pulse_min_us = get_u16(p + 8);
    m->cal.pulse_max_us = get_u16(p + 10);
    m->cal.travel_cdeg = get_u16(p + 12);
    return true;
}

bool msg_decode_config_feedback(const proto_frame_t *f, msg_config_feedback_t *m)
{
    if (f->len != 1 && f->len != 9) {
        return false;
    }
    const uint8_t *p = f->payload;
    m->channel = p[0];
    m->on = f->len == 9;
    if (m->on) {
        m->cal.adc_lo = get_u16(p + 1);
        m->cal.angle_lo_cdeg = get_i16(p + 3);
        m->cal.adc_hi = get_u16(p + 5);
        m->cal.angle_hi_cdeg = get_i16(p + 7);
    }
    return true;
}

bool msg_decode_config_system(const proto_frame_t *f, msg_config_system_t *m)
{
    if (f->len != 7) {
        return false;
    }
    m->watchdog_ms = get_u16(f->payload);
    m->watchdog_action = f->payload[2];
    m->telemetry_period_ms = get_u16(f->payload + 3);
    m->servo_speed_cdeg_s = get_u16(f->payload + 5);
    return m->watchdog_action <= 1;
}

bool msg_decode_enable(const proto_frame_t *f, bool *enable)
{
    if (f->len != 1 || f->payload[0] > 1) {
        return false;
    }
    *enable = f->payload[0] == 1;
    return true;
}

uint8_t msg_encode_pong(const msg_pong_t *m, uint8_t *payload)
{
    put_u64(payload, m->host_time_us);
    put_u32(payload + 8, m->mcu_time_us);
    put_u32(payload + MSG_PONG_BOOT_ID, m->boot_id);
    return MSG_PONG_LEN;
}

uint8_t msg_encode_error(const msg_error_t *m, uint8_t *payload)
{
    payload[0] = m->code;
    payload[1] = m->type;
    put_u16(payload + 2, m->seq);
    return 4;
}

uint8_t msg_encode_telemetry(const msg_telemetry_t *m, uint8_t *payload)
{
    uint8_t *p = payload;
    put_u32(p, m->mcu_time_us);
    put_u16(p + 4, m->flags);
    put_u16(p + 6, m->limit_mask);
    put_u16(p + 8, m->feedback_mask);
    p += 10;
    for (uint8_t i = 0; i < CNT_COUNT; i++, p += 2) {
        put_u16(p, m->counters[i]);
    }
    *p++ = m->count;
    for (uint8_t i = 0; i < m->count; i++, p += 2) {
        put_u16(p, (uint16_t)m->angle_cdeg[i]);
    }
    for (uint8_t i = 0; i < m->count; i++, p += 2) {
        put_u16(p, m->pulse_us[i]);
    }
    return (uint8_t)(p - payload);
}
