//! How a worker hands what it learned to whoever started it, without knowing who that is.
//!
//! A worker sends its own message type (`ScrapeReport`, `KubeUpdate`, …) into an [`Outbox`];
//! the outbox converts it into the message type of the consumer's channel with `From` (the
//! console's `app::Event`, or the worker's own type for a headless consumer such as `kvtop
//! check`). So the sources never name the app, and one worker serves every consumer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;

type SendFuture = Pin<Box<dyn Future<Output = bool> + Send>>;

/// A sender of `M` into a channel of any type that `M` converts into. Cloning is cheap.
pub struct Outbox<M> {
    send: Arc<dyn Fn(M) -> SendFuture + Send + Sync>,
}

impl<M> Clone for Outbox<M> {
    fn clone(&self) -> Self {
        Outbox {
            send: Arc::clone(&self.send),
        }
    }
}

impl<M: Send + 'static> Outbox<M> {
    /// An outbox into `channel`, converting each message with `E::from`.
    pub fn new<E>(channel: mpsc::Sender<E>) -> Self
    where
        E: From<M> + Send + 'static,
    {
        Outbox {
            send: Arc::new(move |message: M| {
                let channel = channel.clone();
                Box::pin(async move { channel.send(E::from(message)).await.is_ok() })
            }),
        }
    }

    /// Send one message, waiting while the channel is full. `false`: the consumer is gone,
    /// and the worker should stop.
    pub async fn send(&self, message: M) -> bool {
        (self.send)(message).await
    }
}

impl<M> std::fmt::Debug for Outbox<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbox")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Wrapped {
        Number(u32),
    }

    impl From<u32> for Wrapped {
        fn from(n: u32) -> Self {
            Wrapped::Number(n)
        }
    }

    #[tokio::test]
    async fn messages_arrive_converted_and_a_closed_channel_says_stop() {
        let (tx, mut rx) = mpsc::channel::<Wrapped>(2);
        let outbox: Outbox<u32> = Outbox::new(tx);
        assert!(outbox.clone().send(7).await);
        assert_eq!(rx.recv().await, Some(Wrapped::Number(7)));
        drop(rx);
        assert!(!outbox.send(8).await, "the consumer is gone");
    }
}
