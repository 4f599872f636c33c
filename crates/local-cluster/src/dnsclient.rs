//! A minimal DNS client (one A query over UDP) built on hickory's message types: `up` uses it
//! to see that cluster DNS answers, tests to resolve Service names from the host.

use hickory_server::proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_server::proto::rr::{Name, RData, RecordType};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

/// The answer to an A query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Addresses(Vec<Ipv4Addr>),
    /// The server answered with this response code (NXDomain, Refused, ...).
    Code(String),
}

/// Asks `server` for the A records of `name`.
pub fn query_a(server: SocketAddr, name: &str, timeout: Duration) -> std::io::Result<Answer> {
    let qname =
        Name::from_ascii(name).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let id: u16 = (std::process::id() as u16)
        ^ (std::time::SystemTime::now().elapsed().map(|d| d.subsec_nanos()).unwrap_or(7) as u16);
    let mut msg = Message::new(id, MessageType::Query, OpCode::Query);
    msg.metadata.recursion_desired = true;
    msg.add_query(Query::query(qname, RecordType::A));
    let bytes = msg.to_vec().map_err(|e| std::io::Error::other(e.to_string()))?;
    let socket = UdpSocket::bind("0.0.0.0:0")?;
    socket.set_read_timeout(Some(timeout))?;
    socket.send_to(&bytes, server)?;
    let mut buf = [0u8; 4096];
    let (n, _) = socket.recv_from(&mut buf)?;
    let reply = Message::from_vec(&buf[..n]).map_err(|e| std::io::Error::other(e.to_string()))?;
    if reply.metadata.response_code != ResponseCode::NoError {
        return Ok(Answer::Code(format!("{:?}", reply.metadata.response_code)));
    }
    Ok(Answer::Addresses(
        reply
            .answers
            .iter()
            .filter_map(|r| match &r.data {
                RData::A(a) => Some(a.0),
                _ => None,
            })
            .collect(),
    ))
}
