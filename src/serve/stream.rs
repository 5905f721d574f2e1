//! Query results as a streamed response body.
//!
//! A small query whose answer fits in two pieces is answered whole on the
//! worker that routed it (`routes::QueryJob::run_inline`). Every other
//! query is parsed and evaluated on a worker thread of its own, which
//! writes the serialized results into a bounded channel in 64 KiB pieces;
//! the connection's task sends them as chunks as they come. Memory is
//! bounded by the channel, not the result. A client that goes away drops
//! the channel, and the worker's next write fails, which ends the
//! evaluation; a client that stops reading is dropped at `--send-timeout`,
//! which does the same.
//!
//! The status line must be written before the body, so the connection
//! waits (as a task, not a thread) for the first piece or the end: a result
//! that fits in one piece, and every error found before the first piece,
//! get their true status. An error after that (a timeout in the middle of a
//! large result) can only cut the stream: the body ends without chunked
//! encoding's final empty chunk, which every HTTP client reports as an
//! incomplete response. With `--max-rows`, everything is held until the end
//! (at most that many rows), so that a cut result can say so in its headers.

use std::future::Future;
use std::io::{self, Write};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc::{Receiver, Sender};

use crate::sparql::run::{QueryError, QuerySummary};

const PIECE: usize = 64 << 10;
/// Pieces in flight between the worker and the socket.
const PIECES_IN_FLIGHT: usize = 8;

pub enum Message {
    /// The query parsed and has a result format; the body follows.
    Head {
        content_type: &'static str,
    },
    Bytes(Vec<u8>),
    /// A result that ended within its first piece: head, body and end.
    Whole {
        content_type: &'static str,
        body: Vec<u8>,
        done: Result<QuerySummary, QueryError>,
    },
    /// The worker finished: what it wrote, or why it stopped.
    Done(Result<QuerySummary, QueryError>),
    /// Refused before any result: status and message.
    Refused(u16, String),
}

pub fn channel() -> (Sender<Message>, Receiver<Message>) {
    tokio::sync::mpsc::channel(PIECES_IN_FLIGHT)
}

/// The worker's output: whole pieces go to the channel as they fill. The
/// head waits for the first full piece, so that a result that ends before
/// one can go as a single [`Message::Whole`].
pub struct PieceWriter {
    tx: Sender<Message>,
    buf: Vec<u8>,
    /// The content type, until the head is sent.
    head: Option<&'static str>,
}

impl PieceWriter {
    pub fn new(tx: Sender<Message>, content_type: &'static str) -> PieceWriter {
        PieceWriter { tx, buf: Vec::with_capacity(PIECE), head: Some(content_type) }
    }

    /// Sends what is left, then the end.
    pub fn finish(mut self, done: Result<QuerySummary, QueryError>) {
        let body = std::mem::take(&mut self.buf);
        if let Some(content_type) = self.head.take() {
            let _ = self.tx.blocking_send(Message::Whole { content_type, body, done });
            return;
        }
        if !body.is_empty() {
            let _ = self.tx.blocking_send(Message::Bytes(body));
        }
        let _ = self.tx.blocking_send(Message::Done(done));
    }

    fn send_piece(&mut self) -> io::Result<()> {
        let gone = |_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away");
        if let Some(content_type) = self.head.take() {
            self.tx.blocking_send(Message::Head { content_type }).map_err(gone)?;
        }
        let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE));
        self.tx.blocking_send(Message::Bytes(piece)).map_err(gone)
    }
}

impl Write for PieceWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PIECE {
            self.send_piece()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What the connection learned before answering.
pub enum Start {
    /// The whole result (it ended before a second piece, or `--max-rows`).
    Whole {
        content_type: &'static str,
        body: Vec<u8>,
        summary: QuerySummary,
    },
    /// The result is larger than a piece: stream it.
    Streaming {
        content_type: &'static str,
        first: Vec<u8>,
        rx: Receiver<Message>,
    },
    Failed(QueryError),
    Refused(u16, String),
    /// Nothing came within the bound (the worker is stuck past its deadline).
    Silent,
}

/// The next message, `None` after `patience` without one. A worker that
/// ended without a last message panicked (the panic is on the server's
/// stderr): a fault of ours, reported as such.
async fn next(rx: &mut Receiver<Message>, patience: Duration) -> Option<Message> {
    match tokio::time::timeout(patience, rx.recv()).await {
        Ok(Some(m)) => Some(m),
        Ok(None) => Some(Message::Done(Err(QueryError::Io(io::Error::other(
            "the query's worker stopped unexpectedly (an internal error; see the server's log)",
        ))))),
        Err(_) => None,
    }
}

/// Waits for enough of the worker's output to choose the status.
pub async fn start(mut rx: Receiver<Message>, hold_all: bool, patience: Duration) -> Start {
    let content_type = match next(&mut rx, patience).await {
        Some(Message::Head { content_type }) => content_type,
        Some(Message::Whole { content_type, body, done }) => {
            return match done {
                Ok(summary) => Start::Whole { content_type, body, summary },
                Err(e) => Start::Failed(e),
            }
        }
        Some(Message::Refused(status, message)) => return Start::Refused(status, message),
        Some(Message::Done(Err(e))) => return Start::Failed(e),
        Some(_) => return Start::Failed(QueryError::Evaluation("results before their format".into())),
        None => return Start::Silent,
    };
    let mut body = Vec::new();
    loop {
        match next(&mut rx, patience).await {
            Some(Message::Bytes(piece)) if !hold_all && !body.is_empty() => {
                body.extend_from_slice(&piece);
                return Start::Streaming { content_type, first: body, rx };
            }
            Some(Message::Bytes(piece)) => body.extend_from_slice(&piece),
            Some(Message::Done(Ok(summary))) => return Start::Whole { content_type, body, summary },
            Some(Message::Done(Err(e))) => return Start::Failed(e),
            Some(_) => return Start::Failed(QueryError::Evaluation("a second result format".into())),
            None => return Start::Silent,
        }
    }
}

/// Called once when a streamed body ends: the rows (when the worker
/// reported them) and whether the result was complete.
pub type OnEnd = Box<dyn FnOnce(Option<usize>, bool) + Send>;

/// The rest of a streamed result. `on_end` runs once, when the body ends
/// or is dropped (the request log line), with the rows when the worker
/// reported them.
pub struct StreamBody {
    first: Option<Bytes>,
    rx: Option<Receiver<Message>>,
    patience: Duration,
    silence: Option<Pin<Box<tokio::time::Sleep>>>,
    rows: Option<usize>,
    on_end: Option<OnEnd>,
}

impl StreamBody {
    pub fn new(first: Vec<u8>, rx: Receiver<Message>, patience: Duration, on_end: OnEnd) -> StreamBody {
        StreamBody {
            first: Some(first.into()),
            rx: Some(rx),
            patience,
            silence: None,
            rows: None,
            on_end: Some(on_end),
        }
    }

    fn end(&mut self, complete: bool) {
        self.rx = None;
        if let Some(f) = self.on_end.take() {
            f(self.rows, complete);
        }
    }

    fn cut(&mut self, why: String) -> Poll<Option<io::Result<Bytes>>> {
        self.end(false);
        Poll::Ready(Some(Err(io::Error::other(why))))
    }

    /// The next piece; an error cuts the response (no final chunk).
    pub fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        let Some(rx) = &mut self.rx else { return Poll::Ready(None) };
        match rx.poll_recv(cx) {
            Poll::Ready(message) => {
                self.silence = None;
                match message {
                    Some(Message::Bytes(piece)) => Poll::Ready(Some(Ok(piece.into()))),
                    Some(Message::Done(Ok(summary))) => {
                        self.rows = Some(summary.rows);
                        self.end(true);
                        Poll::Ready(None)
                    }
                    Some(Message::Done(Err(e))) => self.cut(format!("result cut: {e}")),
                    Some(_) => self.cut("result cut: unexpected message".into()),
                    None => self.cut("result cut: the query's worker stopped unexpectedly".into()),
                }
            }
            Poll::Pending => {
                let patience = self.patience;
                let silence = self.silence.get_or_insert_with(|| Box::pin(tokio::time::sleep(patience)));
                match silence.as_mut().poll(cx) {
                    Poll::Ready(()) => self.cut("result cut: the query worker went silent".into()),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        self.end(false);
    }
}
