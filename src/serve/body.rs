//! Response bodies: whole (errors, small results) or streamed from a query
//! worker ([`super::stream::StreamBody`]), as hyper's `http_body::Body`.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

use super::stream::StreamBody;

pub enum Body {
    /// The bytes, until they are sent.
    Whole(Option<Bytes>),
    Stream(Box<StreamBody>),
}

impl Body {
    pub fn empty() -> Body {
        Body::Whole(None)
    }

    pub fn whole(bytes: impl Into<Bytes>) -> Body {
        let bytes = bytes.into();
        Body::Whole((!bytes.is_empty()).then_some(bytes))
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Body::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(stream) => stream.poll_piece(cx).map(|piece| piece.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Whole(None))
    }

    /// Whole bodies have their length (`Content-Length`, also on HEAD);
    /// streams go chunked.
    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Whole(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}
