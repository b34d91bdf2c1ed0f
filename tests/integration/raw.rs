//! A bare PostgreSQL protocol client for the tests that look at what the
//! drivers hide: ReadyForQuery's transaction status byte, ParameterStatus
//! messages, notices, PortalSuspended, and messages a driver would never
//! send (a `$4000000000` parameter).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A message from the server, decoded as far as the tests need.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    ParameterStatus(String, String),
    Ready(char),
    Error { code: String, message: String },
    Notice { code: String, message: String },
    Complete(String),
    Row(Vec<Option<String>>),
    Description(Vec<(String, u32)>),
    Suspended,
    Other(char),
}

pub struct RawClient {
    stream: TcpStream,
}

impl RawClient {
    /// Connects and completes the startup; returns the messages up to the
    /// first ReadyForQuery too.
    pub async fn connect(port: u16, parameters: &[(&str, &str)]) -> (RawClient, Vec<Reply>) {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let mut client = RawClient { stream };
        let mut body = Vec::new();
        body.extend_from_slice(&196608i32.to_be_bytes());
        for (key, value) in parameters {
            body.extend_from_slice(key.as_bytes());
            body.push(0);
            body.extend_from_slice(value.as_bytes());
            body.push(0);
        }
        body.push(0);
        let mut message = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        message.extend(body);
        client.stream.write_all(&message).await.expect("startup");
        let replies = client.until_ready().await;
        (client, replies)
    }

    /// Writes `bytes` as they are (malformed messages).
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("send");
    }

    /// The next message from the server.
    pub async fn reply(&mut self) -> Reply {
        self.next().await
    }

    /// Whether the server closed the connection (the next read ends).
    pub async fn closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.stream.read(&mut byte).await, Ok(0) | Err(_))
    }

    pub async fn send(&mut self, kind: u8, body: &[u8]) {
        let mut message = vec![kind];
        message.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        message.extend_from_slice(body);
        self.stream.write_all(&message).await.expect("send");
    }

    /// A simple query, with every reply up to ReadyForQuery.
    pub async fn query(&mut self, sql: &str) -> Vec<Reply> {
        self.send(b'Q', &cstring(sql)).await;
        self.until_ready().await
    }

    pub async fn parse(&mut self, name: &str, sql: &str) {
        let mut body = cstring(name);
        body.extend(cstring(sql));
        body.extend_from_slice(&0i16.to_be_bytes());
        self.send(b'P', &body).await;
    }

    /// Binds `statement` to `portal` with text parameters and text results.
    pub async fn bind(&mut self, portal: &str, statement: &str, params: &[Option<&str>]) {
        let mut body = cstring(portal);
        body.extend(cstring(statement));
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for param in params {
            match param {
                Some(value) => {
                    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
                    body.extend_from_slice(value.as_bytes());
                }
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        body.extend_from_slice(&0i16.to_be_bytes());
        self.send(b'B', &body).await;
    }

    pub async fn describe_portal(&mut self, portal: &str) {
        let mut body = vec![b'P'];
        body.extend(cstring(portal));
        self.send(b'D', &body).await;
    }

    pub async fn execute(&mut self, portal: &str, max_rows: i32) {
        let mut body = cstring(portal);
        body.extend_from_slice(&max_rows.to_be_bytes());
        self.send(b'E', &body).await;
    }

    /// Sync, with every reply up to ReadyForQuery.
    pub async fn sync(&mut self) -> Vec<Reply> {
        self.send(b'S', &[]).await;
        self.until_ready().await
    }

    pub async fn until_ready(&mut self) -> Vec<Reply> {
        let mut replies = Vec::new();
        loop {
            let reply = self.next().await;
            let done = matches!(reply, Reply::Ready(_));
            replies.push(reply);
            if done {
                return replies;
            }
        }
    }

    async fn next(&mut self) -> Reply {
        let kind = self.stream.read_u8().await.expect("message type");
        let length = self.stream.read_i32().await.expect("message length") as usize;
        let mut body = vec![0u8; length - 4];
        self.stream
            .read_exact(&mut body)
            .await
            .expect("message body");
        match kind {
            b'S' => {
                let parts = strings(&body);
                Reply::ParameterStatus(parts[0].clone(), parts[1].clone())
            }
            b'Z' => Reply::Ready(body[0] as char),
            b'E' | b'N' => {
                let (code, message) = fields(&body);
                if kind == b'E' {
                    Reply::Error { code, message }
                } else {
                    Reply::Notice { code, message }
                }
            }
            b'C' => Reply::Complete(strings(&body).remove(0)),
            b'D' => Reply::Row(row(&body)),
            b'T' => Reply::Description(description(&body)),
            b's' => Reply::Suspended,
            other => Reply::Other(other as char),
        }
    }
}

fn cstring(text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    bytes
}

fn strings(body: &[u8]) -> Vec<String> {
    body.split(|b| *b == 0)
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect()
}

fn fields(body: &[u8]) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    for field in body.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let value = String::from_utf8_lossy(&field[1..]).into_owned();
        match field[0] {
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    (code, message)
}

fn row(body: &[u8]) -> Vec<Option<String>> {
    let count = i16::from_be_bytes([body[0], body[1]]) as usize;
    let mut at = 2;
    let mut values = Vec::with_capacity(count);
    for _ in 0..count {
        let length = i32::from_be_bytes(body[at..at + 4].try_into().unwrap());
        at += 4;
        if length < 0 {
            values.push(None);
        } else {
            let end = at + length as usize;
            values.push(Some(String::from_utf8_lossy(&body[at..end]).into_owned()));
            at = end;
        }
    }
    values
}

fn description(body: &[u8]) -> Vec<(String, u32)> {
    let count = i16::from_be_bytes([body[0], body[1]]) as usize;
    let mut at = 2;
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        let end = at + body[at..].iter().position(|b| *b == 0).unwrap();
        let name = String::from_utf8_lossy(&body[at..end]).into_owned();
        at = end + 1;
        let oid = u32::from_be_bytes(body[at + 6..at + 10].try_into().unwrap());
        at += 18;
        columns.push((name, oid));
    }
    columns
}

/// The status byte of the last ReadyForQuery in `replies`.
pub fn status(replies: &[Reply]) -> char {
    replies
        .iter()
        .rev()
        .find_map(|reply| match reply {
            Reply::Ready(status) => Some(*status),
            _ => None,
        })
        .expect("a ReadyForQuery")
}

/// The SQLSTATE of the first error in `replies`.
pub fn error_code(replies: &[Reply]) -> Option<String> {
    replies.iter().find_map(|reply| match reply {
        Reply::Error { code, .. } => Some(code.clone()),
        _ => None,
    })
}
