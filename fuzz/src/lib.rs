//! What both fuzz targets share: decoding bytes as pgaccel's listener does.

use std::panic::AssertUnwindSafe;
use std::sync::Once;

use bytes::BytesMut;
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::messages::PgWireFrontendMessage;
use pgwire::tokio::server::PgWireMessageServerCodec;
use tokio_util::codec::Decoder;

/// Decodes `data` as frames read from `state` on, frame after frame, until
/// the codec needs more bytes or refuses them, moving through the states as
/// pgaccel's connection loop does (negotiation, startup, authentication).
/// A frame decoded without consuming bytes in a state it does not leave
/// would spin the connection: it aborts, and the fuzzer reports it. pgwire's decoders panic on some
/// malformed frames (a Bind whose counts run past its end); pgaccel's
/// connection loop catches such a panic and ends the connection with 08P01
/// (`wire::connection::decoded`), so it is caught here the same way. What
/// is left to find is what pgaccel could not survive: an abort, a stack
/// overflow, unbounded memory or time.
pub fn decode_all(state: PgWireConnectionState, data: &[u8]) {
    static QUIET: Once = Once::new();
    // The fuzzer's own hook aborts on any panic, caught or not.
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let mut client = DefaultClient::<String>::new(([127, 0, 0, 1], 5432).into(), false);
    client.set_state(state);
    let mut codec = PgWireMessageServerCodec::new(client);
    let mut buffer = BytesMut::from(data);
    let mut remaining = buffer.len();
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
        while let Ok(Some(message)) = codec.decode(&mut buffer) {
            let before = std::mem::discriminant(&codec.client_info.state());
            match message {
                PgWireFrontendMessage::SslNegotiation(_) => {
                    codec
                        .client_info
                        .set_state(PgWireConnectionState::AwaitingStartup);
                }
                PgWireFrontendMessage::Startup(_) => {
                    codec
                        .client_info
                        .set_state(PgWireConnectionState::AuthenticationInProgress);
                }
                PgWireFrontendMessage::CancelRequest(_) => return,
                _ => {}
            }
            let moved = std::mem::discriminant(&codec.client_info.state()) != before;
            if !moved && buffer.len() == remaining {
                std::process::abort();
            }
            remaining = buffer.len();
        }
    }));
}
