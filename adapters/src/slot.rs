//! The runtime of the generated registration tables (`api::<platform>::Handlers`): one typed slot
//! per endpoint, holding the function that serves it and what it needs. A source declares what it
//! serves once, by filling slots; the generated `api::Handlers` reads every derived fact from them.

pub use crate::error::SourceError;
pub use crate::item::Page;
pub use crate::upstream::{BoxFuture, Ctx};

/// What a handler returns: the page, once the upstream answered.
pub type Call<'a> = BoxFuture<'a, Result<Page, SourceError>>;

/// The function serving one endpoint, taking that endpoint's typed request.
pub type Handler<R> = for<'a> fn(&'a Ctx<'a>, &'a R) -> Call<'a>;

/// One endpoint a source serves.
pub struct Slot<R: 'static> {
    fetch: Handler<R>,
    /// Takes only the requests this accepts (for example an archive that serves date-ordered
    /// listings only); the others go to the next source, and this one is not counted as failed.
    only_when: Option<fn(&R) -> bool>,
    needs_credential: bool,
}

/// What a slot says about its endpoint, without calling anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotMeta {
    /// Served only with the source's credential; without one the source is left out of this
    /// endpoint's chain.
    pub needs_credential: bool,
    /// Served for some requests only (see [`Slot::only_when`]).
    pub conditional: bool,
}

impl<R: 'static> Slot<R> {
    pub const fn new(fetch: Handler<R>) -> Self {
        Slot {
            fetch,
            only_when: None,
            needs_credential: false,
        }
    }

    /// Serves this endpoint only for requests `accepts` takes.
    pub const fn only_when(self, accepts: fn(&R) -> bool) -> Self {
        Slot {
            only_when: Some(accepts),
            ..self
        }
    }

    /// Serves this endpoint only when the source has its credential.
    pub const fn with_credential(self) -> Self {
        Slot {
            needs_credential: true,
            ..self
        }
    }

    pub fn meta(&self) -> SlotMeta {
        SlotMeta {
            needs_credential: self.needs_credential,
            conditional: self.only_when.is_some(),
        }
    }

    pub fn takes(&self, request: &R) -> bool {
        self.only_when.is_none_or(|accepts| accepts(request))
    }

    pub fn call<'a>(&self, ctx: &'a Ctx<'a>, request: &'a R) -> Call<'a> {
        (self.fetch)(ctx, request)
    }
}

/// A slot served by `async fn name(ctx: &Ctx<'_>, request: &TheRequest) -> Result<Page, SourceError>`.
macro_rules! serve {
    ($handler:path) => {
        $crate::slot::Slot::new(|ctx, request| Box::pin($handler(ctx, request)))
    };
}
pub(crate) use serve;
