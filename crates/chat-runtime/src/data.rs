//! The bot's own state — a database pool, an LLM client, configuration —
//! registered once on the builder with [`BotBuilder::data`](crate::BotBuilder::data)
//! and read by every handler with [`Ctx::data`](crate::Ctx::data), by type.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// Values by type; cheap to clone (one `Arc`).
#[derive(Clone, Default)]
pub(crate) struct AppData(Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl AppData {
    /// Adds `value`, replacing an earlier value of the same type.
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.0).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was registered.
    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// How many values are registered.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_by_type_and_replaced_by_a_later_one() {
        let mut data = AppData::default();
        assert_eq!(data.get::<u32>(), None);
        data.insert(7u32);
        data.insert(String::from("pool"));
        let shared = data.clone();
        data.insert(8u32);
        assert_eq!(data.get::<u32>(), Some(&8));
        assert_eq!(data.get::<String>().map(String::as_str), Some("pool"));
        assert_eq!(shared.get::<u32>(), Some(&7), "a clone keeps what it saw");
        assert_eq!(data.get::<u64>(), None);
        assert_eq!(data.len(), 2);
    }
}
