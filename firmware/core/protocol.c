#include "protocol.h"

#include <string.h>

#include "bytes.h"
#include "crc16.h"
#include "messages.h"

#define BOOT_ID_LEN 4u

void protocol_parser_init(proto_parser_t *p, const uint8_t *key, proto_dir_t rx_dir,
                          uint32_t boot_id, proto_frame_cb on_frame, void *ctx)
{
    memset(p, 0, sizeof *p);
    crc16_init();
    p->key = key;
    p->rx_dir = rx_dir;
    p->max_payload = rx_dir == PROTO_DIR_TO_MCU ? PROTO_MAX_PAYLOAD_TO_MCU : PROTO_MAX_PAYLOAD;
    p->boot_id = boot_id;
    p->on_frame = on_frame;
    p->ctx = ctx;
}

bool protocol_replay_accept(proto_replay_t *r, uint32_t counter)
{
    if (!r->started || counter > r->highest) {
        uint32_t shift = r->started ? counter - r->highest : PROTO_REPLAY_WINDOW;
        r->seen = shift >= PROTO_REPLAY_WINDOW ? 1u : (r->seen << shift) | 1u;
        r->highest = counter;
        r->started = true;
        return true;
    }
    uint32_t age = r->highest - counter;
    if (age >= PROTO_REPLAY_WINDOW || (r->seen & (1ul << age))) {
        return false;
    }
    r->seen |= 1ul << age;
    return true;
}

/* The boot id a frame's MAC mixes in: 0 for a PING to the MCU (the host may not know the id
 * yet), the id a PONG carries, else the MCU's current one. */
static uint32_t mac_boot_id(proto_dir_t dir, const uint8_t *frame, uint32_t boot_id)
{
    uint8_t type = frame[2] & (uint8_t)~PROTO_TYPE_AUTH;
    if (dir == PROTO_DIR_TO_MCU && type == MSG_PING) {
        return 0;
    }
    if (dir == PROTO_DIR_TO_HOST && type == MSG_PONG) {
        return frame[1] >= MSG_PONG_LEN ? get_u32(frame + PROTO_HEADER_LEN + MSG_PONG_BOOT_ID) : 0;
    }
    return boot_id;
}

/* Tag over DIR || BOOT_ID || LEN TYPE SEQ PAYLOAD COUNTER (frame[1 .. covered - 1]). */
static uint32_t mac_tag(const uint8_t *key, proto_dir_t dir, uint32_t boot_id,
                        const uint8_t *frame, size_t covered)
{
    uint8_t m[1 + BOOT_ID_LEN + PROTO_MAX_FRAME];
    m[0] = (uint8_t)dir;
    put_u32(m + 1, mac_boot_id(dir, frame, boot_id));
    memcpy(m + 1 + BOOT_ID_LEN, frame + 1, covered - 1);
    return (uint32_t)siphash24(key, m, covered + BOOT_ID_LEN);
}

/* Decide on a complete, CRC-valid frame of total length n. */
static void accept_frame(proto_parser_t *p, const uint8_t *frame, size_t n)
{
    proto_frame_t f;
    f.type = frame[2] & (uint8_t)~PROTO_TYPE_AUTH;
    f.seq = get_u16(frame + 3);
    f.len = frame[1];
    f.payload = frame + PROTO_HEADER_LEN;
    f.authenticated = (frame[2] & PROTO_TYPE_AUTH) != 0;
    f.counter = 0;
    if (f.authenticated != (p->key != NULL)) {
        p->counters.bad_auth++;
        return;
    }
    if (f.authenticated) {
        size_t covered = n - PROTO_TAG_LEN - PROTO_CRC_LEN;
        f.counter = get_u32(frame + covered - 4);
        if (mac_tag(p->key, p->rx_dir, p->boot_id, frame, covered) != get_u32(frame + covered)) {
            p->counters.bad_auth++;
            return;
        }
        if (!protocol_replay_accept(&p->replay, f.counter)) {
            p->counters.replayed++;
            return;
        }
    }
    p->counters.frames_ok++;
    p->on_frame(p->ctx, &f);
}

/* Forget the first n bytes held (no copying: the rest moves only when room runs out). */
static void drop(proto_parser_t *p, size_t n)
{
    p->held = (uint8_t)(p->held - n);
    p->head = p->held ? (uint8_t)(p->head + n) : 0;
}

/* CRC-16 of buf[s .. e) from the running CRCs, in constant time. */
static uint16_t held_crc(const proto_parser_t *p, size_t s, size_t e)
{
    return p->crc[e] ^ crc16_zeros(p->crc[s] ^ CRC16_INIT, (uint8_t)(e - s));
}

/* Consume complete frames and bad candidates from the front until an incomplete candidate
 * (or nothing) is left. */
static void scan(proto_parser_t *p)
{
    while (p->held > 0) {
        const uint8_t *b = p->buf + p->head;
        if (b[0] != PROTO_SYNC) {
            const uint8_t *sync = memchr(b, PROTO_SYNC, p->held);
            drop(p, sync ? (size_t)(sync - b) : p->held);
            continue;
        }
        if (p->held < 3) {
            return;
        }
        if (b[1] > p->max_payload) {
            p->counters.bad_length++;
            drop(p, 1);
            continue;
        }
        size_t n = PROTO_HEADER_LEN + b[1] + PROTO_CRC_LEN +
                   ((b[2] & PROTO_TYPE_AUTH) ? PROTO_AUTH_LEN : 0);
        if (p->held < n) {
            return;
        }
        if (held_crc(p, p->head + 1u, p->head + n - 2u) != get_u16(b + n - 2)) {
            p->counters.bad_crc++;
            drop(p, 1); /* the next frame may start inside this one */
            continue;
        }
        accept_frame(p, b, n);
        drop(p, n);
    }
}

void protocol_feed(proto_parser_t *p, const uint8_t *data, size_t len)
{
    while (len > 0) {
        if (p->head > 0 && p->head + p->held == sizeof p->buf) {
            memmove(p->buf, p->buf + p->head, p->held);
            memmove(p->crc, p->crc + p->head, (p->held + 1u) * sizeof p->crc[0]);
            p->head = 0;
        }
        size_t end = p->head + p->held;
        if (p->held == 0) {
            p->crc[end] = 0;
        }
        size_t room = sizeof p->buf - end;
        size_t chunk = len < room ? len : room;
        memcpy(p->buf + end, data, chunk);
        crc16_running(p->crc + end, data, chunk);
        p->held = (uint8_t)(p->held + chunk);
        data += chunk;
        len -= chunk;
        scan(p);
    }
}

void protocol_timeout(proto_parser_t *p)
{
    while (p->held > 0) { /* after scan: an incomplete candidate, SYNC first */
        p->counters.rx_timeouts++;
        drop(p, 1);
        scan(p);
    }
}

size_t protocol_encode(proto_sender_t *s, uint8_t type, const uint8_t *payload, uint8_t len,
                       uint8_t *out)
{
    size_t n = PROTO_HEADER_LEN;
    out[0] = PROTO_SYNC;
    out[1] = len;
    out[2] = (uint8_t)(type | (s->key ? PROTO_TYPE_AUTH : 0));
    put_u16(out + 3, s->seq++);
    if (len > 0) {
        memcpy(out + n, payload, len);
    }
    n += len;
    if (s->key) {
        put_u32(out + n, s->counter++);
        n += 4;
        put_u32(out + n, mac_tag(s->key, s->dir, s->boot_id, out, n));
        n += PROTO_TAG_LEN;
    }
    put_u16(out + n, crc16_update(CRC16_INIT, out + 1, n - 1));
    return n + PROTO_CRC_LEN;
}
