//! Handlers: async functions `(Ctx, Event) -> Result<(), E>`, erased so the
//! runtime can hold them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chat_core::{BoxError, Event};

use crate::ctx::Ctx;

/// A boxed handler future.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send + 'static>>;

/// An event handler: any `async` function or closure taking the context and the
/// event and returning `Result<(), E>` for an error type `E` that converts into a
/// boxed error.
///
/// ```
/// use chat_runtime::{Ctx, Event};
///
/// async fn echo(ctx: Ctx, event: Event) -> Result<(), chat_runtime::BoxError> {
///     ctx.thread().post(format!("echo: {}", event.text().unwrap_or(""))).await?;
///     Ok(())
/// }
/// # fn assert_handler<H: chat_runtime::Handler>(_: H) {}
/// # assert_handler(echo);
/// ```
///
/// A handler that needs something of the bot's own (a pool, a client) reads it
/// from [`Ctx::data`](crate::Ctx::data), or, as a closure, clones what it
/// captures before its `async move` block — the closure runs once per event:
///
/// ```
/// use std::sync::Arc;
/// use chat_runtime::{Ctx, Event};
///
/// let prefix = Arc::new(String::from("echo: "));
/// let handler = move |ctx: Ctx, event: Event| {
///     let prefix = Arc::clone(&prefix);
///     async move {
///         ctx.thread().post(format!("{prefix}{}", event.text().unwrap_or(""))).await?;
///         Ok::<_, chat_runtime::BoxError>(())
///     }
/// };
/// # fn assert_handler<H: chat_runtime::Handler>(_: H) {}
/// # assert_handler(handler);
/// ```
///
/// Moving the captured value into the `async` block instead makes the closure
/// `FnOnce`, which the compiler refuses (naming the two ways above):
///
/// ```compile_fail
/// use std::sync::Arc;
/// use chat_runtime::{Ctx, Event};
///
/// let prefix = Arc::new(String::from("echo: "));
/// let handler = move |ctx: Ctx, _event: Event| async move {
///     ctx.thread().post(prefix.to_string()).await?;
///     Ok::<_, chat_runtime::BoxError>(())
/// };
/// fn assert_handler<H: chat_runtime::Handler>(_: H) {}
/// assert_handler(handler);
/// ```
///
/// Or a type of its own implements `Handler`:
///
/// ```
/// use std::sync::Arc;
/// use chat_runtime::{Ctx, Event, Handler, HandlerFuture};
///
/// struct Echo {
///     prefix: Arc<str>,
/// }
///
/// impl Handler for Echo {
///     fn call(&self, ctx: Ctx, event: Event) -> HandlerFuture {
///         let prefix = Arc::clone(&self.prefix);
///         Box::pin(async move {
///             ctx.thread().post(format!("{prefix}{}", event.text().unwrap_or(""))).await?;
///             Ok(())
///         })
///     }
/// }
/// # fn assert_handler<H: Handler>(_: H) {}
/// # assert_handler(Echo { prefix: "echo: ".into() });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a chat-rs handler",
    label = "expected an async fn or closure `(Ctx, Event) -> Result<(), E>`",
    note = "a handler takes `(chat_runtime::Ctx, chat_runtime::Event)`, returns a `Send` future of `Result<(), E>` where `E: Into<BoxError>`, and is `Send + Sync + 'static`",
    note = "a closure is called once per event, so it must be `Fn`: clone what it captures before the `async move` block (`move |ctx, event| {{ let db = db.clone(); async move {{ … }} }}`), or register the value with `BotBuilder::data` and read it with `ctx.data::<T>()`"
)]
pub trait Handler: Send + Sync + 'static {
    /// Runs the handler.
    fn call(&self, ctx: Ctx, event: Event) -> HandlerFuture;
}

impl<F, Fut, E> Handler for F
where
    F: Fn(Ctx, Event) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<BoxError>,
{
    fn call(&self, ctx: Ctx, event: Event) -> HandlerFuture {
        let fut = self(ctx, event);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

pub(crate) type SharedHandler = Arc<dyn Handler>;
