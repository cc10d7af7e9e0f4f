/*
 * Framing: SYNC LEN TYPE SEQ(2) PAYLOAD [COUNTER(4) TAG(4)] CRC(2), little-endian.
 * See firmware/PROTOCOL.md. The parser resynchronises on the next sync byte after any
 * bad frame and only hands over frames that pass CRC and, in authenticated mode, the MAC
 * and the replay window.
 *
 * Bounded work: every byte fed costs one CRC step (the running CRC kept per held byte), and
 * each held byte starts at most one candidate, whose CRC is then checked in constant time
 * from the running CRCs (crc16_zeros); the MAC is computed only for a matching CRC, and such
 * a frame is consumed whole. So feeding k bytes costs at most k CRC steps, k + (bytes held
 * before, < 55 towards the MCU) constant-time checks and one MAC per 15 bytes.
 */
#ifndef PROTOCOL_H
#define PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "siphash.h"

#define PROTO_SYNC 0xA5u
#define PROTO_TYPE_AUTH 0x80u /* TYPE bit: the frame carries COUNTER and TAG */
#define PROTO_HEADER_LEN 5u   /* SYNC LEN TYPE SEQ */
#define PROTO_AUTH_LEN 8u     /* COUNTER TAG */
#define PROTO_TAG_LEN 4u
#define PROTO_CRC_LEN 2u
#define PROTO_MAX_PAYLOAD 120u       /* MCU -> host */
#define PROTO_MAX_PAYLOAD_TO_MCU 40u /* host -> MCU */
#define PROTO_MAX_FRAME (PROTO_HEADER_LEN + PROTO_MAX_PAYLOAD + PROTO_AUTH_LEN + PROTO_CRC_LEN)
#define PROTO_REPLAY_WINDOW 32u

/* Direction byte mixed into the MAC so a frame cannot be reflected back to its sender. */
typedef enum { PROTO_DIR_TO_MCU = 0, PROTO_DIR_TO_HOST = 1 } proto_dir_t;

typedef struct {
    uint8_t type; /* message type, without PROTO_TYPE_AUTH */
    uint16_t seq;
    uint8_t len;
    const uint8_t *payload; /* valid during the frame callback only */
    bool authenticated;
    uint32_t counter; /* authenticated frames only */
} proto_frame_t;

typedef struct {
    uint16_t frames_ok;
    uint16_t bad_crc;
    uint16_t bad_length;
    uint16_t bad_auth; /* missing, unexpected or wrong MAC */
    uint16_t replayed;
    uint16_t rx_timeouts; /* incomplete candidates abandoned by protocol_timeout */
} proto_counters_t;

typedef struct {
    uint32_t highest; /* highest counter accepted so far */
    uint32_t seen;    /* bit i set: counter highest - i was accepted */
    bool started;
} proto_replay_t;

typedef void (*proto_frame_cb)(void *ctx, const proto_frame_t *frame);

typedef struct {
    const uint8_t *key; /* NULL: plain mode, authenticated frames are rejected */
    proto_dir_t rx_dir;
    uint8_t max_payload; /* of rx_dir; a longer LEN is a bad length */
    uint32_t boot_id;    /* the MCU's boot id, mixed into the MAC (see mac_boot_id) */
    proto_replay_t replay;
    proto_counters_t counters;
    proto_frame_cb on_frame;
    void *ctx;
    uint8_t head, held; /* the bytes held: buf[head .. head + held) */
    uint8_t buf[PROTO_MAX_FRAME];
    uint16_t crc[PROTO_MAX_FRAME + 1]; /* crc[i]: CRC from 0 of buf[0 .. i) */
} proto_parser_t;

typedef struct {
    const uint8_t *key; /* NULL: plain frames */
    proto_dir_t dir;
    uint32_t boot_id; /* the MCU's boot id, mixed into the MAC (see mac_boot_id) */
    uint16_t seq;     /* of the next frame */
    uint32_t counter; /* of the next authenticated frame */
} proto_sender_t;

/* boot_id: the MCU's boot id (PROTOCOL.md, "Authenticated mode"); 0 in plain mode is fine. */
void protocol_parser_init(proto_parser_t *p, const uint8_t *key, proto_dir_t rx_dir,
                          uint32_t boot_id, proto_frame_cb on_frame, void *ctx);

/* Feed received bytes; on_frame is called for every accepted frame. */
void protocol_feed(proto_parser_t *p, const uint8_t *data, size_t len);

/* The inter-frame timeout ran out: abandon every incomplete candidate held (each counts as
 * rx_timeouts), handing over any complete frame found behind them. */
void protocol_timeout(proto_parser_t *p);

/* Bytes held (an incomplete candidate), waiting for more or for protocol_timeout. */
static inline uint8_t protocol_held(const proto_parser_t *p)
{
    return p->held;
}

/* Accept counter if it is new and within the window behind the highest one seen. */
bool protocol_replay_accept(proto_replay_t *r, uint32_t counter);

/* Encode one frame into out (PROTO_MAX_FRAME bytes); returns its length. Advances seq and,
 * for authenticated frames, counter. */
size_t protocol_encode(proto_sender_t *s, uint8_t type, const uint8_t *payload, uint8_t len,
                       uint8_t *out);

#endif
