//! Query results as a streamed response body.
//!
//! A small query whose answer fits in two pieces never comes here: it runs
//! on the connection's own thread (`routes::QueryJob::run_inline`). Every
//! other query is parsed and evaluated on a worker thread with the large
//! request stack (`sparql::limits`), which writes the serialized results into a
//! bounded channel in 64 KiB pieces; the connection thread sends them as
//! chunks as they come. Memory is bounded by the channel, not the result. A
//! client that goes away closes the channel, and the worker's next write
//! fails, which ends the evaluation.
//!
//! The status line must be written before the body, so the connection
//! thread waits for the first piece (or the end): a result that fits in one
//! piece, and every error found before the first piece, get their true
//! status. A result that fits in one piece travels as one message, so a
//! selective query costs the connection thread one wake-up, not three. An error after that (a timeout in the middle of a large result)
//! can only cut the stream: the body ends without chunked encoding's final
//! empty chunk, which every HTTP client reports as an incomplete response.
//! With `--max-rows`, everything is held until the end (at most that many
//! rows), so that a cut result can say so in its status and headers.

use std::io::{self, Read, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

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

pub fn channel() -> (SyncSender<Message>, Receiver<Message>) {
    std::sync::mpsc::sync_channel(PIECES_IN_FLIGHT)
}

/// The worker's output: whole pieces go to the channel as they fill. The
/// head waits for the first full piece, so that a result that ends before
/// one can go as a single [`Message::Whole`].
pub struct PieceWriter {
    tx: SyncSender<Message>,
    buf: Vec<u8>,
    /// The content type, until the head is sent.
    head: Option<&'static str>,
}

impl PieceWriter {
    pub fn new(tx: SyncSender<Message>, content_type: &'static str) -> PieceWriter {
        PieceWriter { tx, buf: Vec::with_capacity(PIECE), head: Some(content_type) }
    }

    /// Sends what is left, then the end.
    pub fn finish(mut self, done: Result<QuerySummary, QueryError>) {
        let body = std::mem::take(&mut self.buf);
        if let Some(content_type) = self.head.take() {
            let _ = self.tx.send(Message::Whole { content_type, body, done });
            return;
        }
        if !body.is_empty() {
            let _ = self.tx.send(Message::Bytes(body));
        }
        let _ = self.tx.send(Message::Done(done));
    }

    fn send_piece(&mut self) -> io::Result<()> {
        let gone = |_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away");
        if let Some(content_type) = self.head.take() {
            self.tx.send(Message::Head { content_type }).map_err(gone)?;
        }
        let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE));
        self.tx.send(Message::Bytes(piece)).map_err(gone)
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

/// What the connection thread learned before answering.
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

/// Waits for enough of the worker's output to choose the status.
pub fn start(rx: Receiver<Message>, hold_all: bool, patience: Duration) -> Start {
    let recv = |rx: &Receiver<Message>| match rx.recv_timeout(patience) {
        Ok(m) => Some(m),
        Err(RecvTimeoutError::Timeout) => None,
        // The worker ended without a last message: it panicked (the panic
        // message is on the server's stderr). A fault of ours: 500.
        Err(RecvTimeoutError::Disconnected) => Some(Message::Done(Err(QueryError::Io(io::Error::other(
            "the query's worker stopped unexpectedly (an internal error; see the server's log)",
        ))))),
    };
    let content_type = match recv(&rx) {
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
        match recv(&rx) {
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
pub type OnEnd = Box<dyn FnOnce(Option<usize>, bool)>;

/// The rest of a streamed result, as a `Read` for the response body.
/// `on_end` runs once, when the body ends or is dropped (the request log
/// line, the in-flight count), with the rows when the worker reported them.
pub struct StreamBody {
    pending: Vec<u8>,
    at: usize,
    rx: Option<Receiver<Message>>,
    patience: Duration,
    rows: Option<usize>,
    on_end: Option<OnEnd>,
}

impl StreamBody {
    pub fn new(first: Vec<u8>, rx: Receiver<Message>, patience: Duration, on_end: OnEnd) -> StreamBody {
        StreamBody { pending: first, at: 0, rx: Some(rx), patience, rows: None, on_end: Some(on_end) }
    }

    fn end(&mut self, complete: bool) {
        self.rx = None;
        if let Some(f) = self.on_end.take() {
            f(self.rows, complete);
        }
    }

    fn cut(&mut self, why: String) -> io::Error {
        self.end(false);
        io::Error::other(why)
    }
}

impl Read for StreamBody {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.pending.len() {
            let Some(rx) = &self.rx else { return Ok(0) };
            match rx.recv_timeout(self.patience) {
                Ok(Message::Bytes(piece)) => (self.pending, self.at) = (piece, 0),
                Ok(Message::Done(Ok(summary))) => {
                    self.rows = Some(summary.rows);
                    self.end(true);
                    return Ok(0);
                }
                Ok(Message::Done(Err(e))) => return Err(self.cut(format!("result cut: {e}"))),
                Ok(_) => return Err(self.cut("result cut: unexpected message".into())),
                Err(_) => return Err(self.cut("result cut: the query worker went silent".into())),
            }
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Drop for StreamBody {
    fn drop(&mut self) {
        self.end(false);
    }
}
