//! The first bytes of a connection (SSLRequest, GSSENCRequest, a cancel
//! request or a startup packet), and the authentication messages after a
//! startup.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgwire::api::PgWireConnectionState;

fuzz_target!(|data: &[u8]| {
    for state in [
        PgWireConnectionState::AwaitingSslRequest,
        PgWireConnectionState::AwaitingStartup,
        PgWireConnectionState::AuthenticationInProgress,
    ] {
        pgaccel_fuzz::decode_all(state, data);
    }
});
