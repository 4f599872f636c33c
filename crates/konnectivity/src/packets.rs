//! Building the protocol's packets and reading them back as one enum, so that the server and
//! the agent match on what a packet carries rather than on its `type` and `payload` pair.

use crate::proto::{CloseRequest, CloseResponse, Data, DialRequest, DialResponse, Packet, PacketType, packet::Payload};

/// What a packet says, read from its payload (the upstream code sets `type` to match; a packet
/// without a payload, or with one this version does not know, is [`Frame::Other`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    DialRequest {
        protocol: String,
        address: String,
        random: i64,
    },
    /// A dial's answer: the connection's id, or the error (`error` non-empty).
    DialResponse {
        random: i64,
        connect_id: i64,
        error: String,
    },
    Data {
        connect_id: i64,
        data: Vec<u8>,
    },
    CloseRequest {
        connect_id: i64,
    },
    CloseResponse {
        connect_id: i64,
        error: String,
    },
    /// The agent will go away: new dials should go to other agents.
    Drain,
    Other,
}

impl From<Packet> for Frame {
    fn from(packet: Packet) -> Self {
        match packet.payload {
            Some(Payload::DialRequest(r)) => {
                Frame::DialRequest { protocol: r.protocol, address: r.address, random: r.random }
            }
            Some(Payload::DialResponse(r)) => {
                Frame::DialResponse { random: r.random, connect_id: r.connect_id, error: r.error }
            }
            Some(Payload::Data(d)) => Frame::Data { connect_id: d.connect_id, data: d.data },
            Some(Payload::CloseRequest(c)) => Frame::CloseRequest { connect_id: c.connect_id },
            Some(Payload::CloseResponse(c)) => Frame::CloseResponse { connect_id: c.connect_id, error: c.error },
            Some(Payload::Drain(_)) => Frame::Drain,
            Some(Payload::CloseDial(_)) | None => Frame::Other,
        }
    }
}

fn packet(kind: PacketType, payload: Payload) -> Packet {
    Packet { r#type: kind as i32, payload: Some(payload) }
}

/// A TCP dial of `address` (`host:port`).
pub fn dial_request(address: &str, random: i64) -> Packet {
    packet(
        PacketType::DialReq,
        Payload::DialRequest(DialRequest { protocol: "tcp".into(), address: address.into(), random }),
    )
}

/// The answer to dial `random`: the new connection's id or why it failed.
pub fn dial_response(random: i64, result: Result<i64, String>) -> Packet {
    let (connect_id, error) = match result {
        Ok(id) => (id, String::new()),
        Err(error) => (0, error),
    };
    packet(PacketType::DialRsp, Payload::DialResponse(DialResponse { error, connect_id, random }))
}

pub fn data(connect_id: i64, data: Vec<u8>) -> Packet {
    packet(PacketType::Data, Payload::Data(Data { connect_id, error: String::new(), data }))
}

pub fn close_request(connect_id: i64) -> Packet {
    packet(PacketType::CloseReq, Payload::CloseRequest(CloseRequest { connect_id }))
}

pub fn close_response(connect_id: i64, error: &str) -> Packet {
    packet(PacketType::CloseRsp, Payload::CloseResponse(CloseResponse { error: error.into(), connect_id }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn packets_read_back_as_what_they_were_built_from() {
        let cases = [
            (
                dial_request("10.0.0.5:10250", 7),
                Frame::DialRequest { protocol: "tcp".into(), address: "10.0.0.5:10250".into(), random: 7 },
            ),
            (dial_response(7, Ok(3)), Frame::DialResponse { random: 7, connect_id: 3, error: String::new() }),
            (
                dial_response(7, Err("refused".into())),
                Frame::DialResponse { random: 7, connect_id: 0, error: "refused".into() },
            ),
            (data(3, b"abc".to_vec()), Frame::Data { connect_id: 3, data: b"abc".to_vec() }),
            (close_request(3), Frame::CloseRequest { connect_id: 3 }),
            (close_response(3, ""), Frame::CloseResponse { connect_id: 3, error: String::new() }),
        ];
        for (packet, frame) in cases {
            // Through the wire format, as the other side reads it.
            let decoded = Packet::decode(packet.encode_to_vec().as_slice());
            assert_eq!(decoded.map(Frame::from), Ok(frame));
        }
    }

    #[test]
    fn the_type_field_matches_the_payload_as_upstream_sets_it() {
        assert_eq!(dial_request("a:1", 1).r#type, 0);
        assert_eq!(dial_response(1, Ok(1)).r#type, 1);
        assert_eq!(close_request(1).r#type, 2);
        assert_eq!(close_response(1, "").r#type, 3);
        assert_eq!(data(1, vec![]).r#type, 4);
    }

    #[test]
    fn a_packet_without_payload_is_other() {
        assert_eq!(Frame::from(Packet { r#type: 5, payload: None }), Frame::Other);
    }
}
