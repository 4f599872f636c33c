//! A minimal DNS client (one A or PTR query over UDP or TCP) built on hickory's message types:
//! `up` uses it to see that cluster DNS answers, tests to resolve Service names from the host.

use hickory_server::proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_server::proto::rr::{Name, RData, RecordType};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

/// The answer to a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The A records of the name (an A query).
    Addresses(Vec<Ipv4Addr>),
    /// The names the PTR records point to, with the trailing dot (a PTR query).
    Names(Vec<String>),
    /// The server answered with this response code (NXDomain, Refused, ...).
    Code(String),
}

/// How a query travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Udp,
    /// One query on its own connection, length-prefixed (RFC 1035 4.2.2).
    Tcp,
}

/// Asks `server` for the A records of `name` over UDP.
pub fn query_a(server: SocketAddr, name: &str, timeout: Duration) -> std::io::Result<Answer> {
    query(server, name, RecordType::A, Transport::Udp, timeout)
}

/// Asks `server` for the A records of `name` over `transport`.
pub fn query_a_over(
    server: SocketAddr,
    name: &str,
    transport: Transport,
    timeout: Duration,
) -> std::io::Result<Answer> {
    query(server, name, RecordType::A, transport, timeout)
}

/// Asks `server` for the PTR records of `name` (`d.c.b.a.in-addr.arpa.`) over `transport`.
pub fn query_ptr(server: SocketAddr, name: &str, transport: Transport, timeout: Duration) -> std::io::Result<Answer> {
    query(server, name, RecordType::PTR, transport, timeout)
}

fn query(
    server: SocketAddr,
    name: &str,
    kind: RecordType,
    transport: Transport,
    timeout: Duration,
) -> std::io::Result<Answer> {
    let qname =
        Name::from_ascii(name).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let id: u16 = (std::process::id() as u16)
        ^ (std::time::SystemTime::now().elapsed().map(|d| d.subsec_nanos()).unwrap_or(7) as u16);
    let mut msg = Message::new(id, MessageType::Query, OpCode::Query);
    msg.metadata.recursion_desired = true;
    msg.add_query(Query::query(qname, kind));
    let bytes = msg.to_vec().map_err(|e| std::io::Error::other(e.to_string()))?;
    let reply = match transport {
        Transport::Udp => exchange_udp(server, &bytes, timeout)?,
        Transport::Tcp => exchange_tcp(server, &bytes, timeout)?,
    };
    let reply = Message::from_vec(&reply).map_err(|e| std::io::Error::other(e.to_string()))?;
    if reply.metadata.response_code != ResponseCode::NoError {
        return Ok(Answer::Code(format!("{:?}", reply.metadata.response_code)));
    }
    let answers = reply.answers.iter().map(|r| &r.data);
    Ok(match kind {
        RecordType::PTR => Answer::Names(
            answers
                .filter_map(|d| match d {
                    RData::PTR(p) => Some(p.0.to_string()),
                    _ => None,
                })
                .collect(),
        ),
        _ => Answer::Addresses(
            answers
                .filter_map(|d| match d {
                    RData::A(a) => Some(a.0),
                    _ => None,
                })
                .collect(),
        ),
    })
}

fn exchange_udp(server: SocketAddr, query: &[u8], timeout: Duration) -> std::io::Result<Vec<u8>> {
    let socket = UdpSocket::bind("0.0.0.0:0")?;
    socket.set_read_timeout(Some(timeout))?;
    socket.send_to(query, server)?;
    let mut buf = [0u8; 4096];
    let (n, _) = socket.recv_from(&mut buf)?;
    Ok(buf[..n].to_vec())
}

fn exchange_tcp(server: SocketAddr, query: &[u8], timeout: Duration) -> std::io::Result<Vec<u8>> {
    let len = u16::try_from(query.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "query longer than 65535 bytes"))?;
    let mut stream = TcpStream::connect_timeout(&server, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut framed = len.to_be_bytes().to_vec();
    framed.extend_from_slice(query);
    stream.write_all(&framed)?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len)?;
    let mut reply = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut reply)?;
    Ok(reply)
}
