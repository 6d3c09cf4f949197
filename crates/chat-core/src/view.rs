//! Modals: a small typed [`View`] (a title, submit and close labels, input
//! blocks), and the answers a submission handler gives ([`ModalAnswer`]).
//! Types only; adapters render them (Slack: `views.open` / `update` / `push`
//! and `response_action`). A submission's values are read with
//! [`Modal::value`](crate::Modal::value) and
//! [`Modal::values`](crate::Modal::values).
//!
//! ```
//! use chat_core::view::{Input, ModalAnswer, View};
//!
//! let view = View::new("echo-form", "Echo form")
//!     .submit("Send")
//!     .metadata("C0GENERAL")
//!     .input(Input::text("form", "value", "What should I say?"))
//!     .input(Input::select("tone", "pick", "Tone").option("Calm", "calm").option("Loud", "loud"))
//!     .input(Input::checkboxes("extras", "flags", "Extras").option("Shout", "shout").optional());
//! assert_eq!(view.inputs.len(), 3);
//! let refused = ModalAnswer::errors([("form", "Say something")]);
//! assert!(matches!(refused, ModalAnswer::Errors(_)));
//! ```

use serde::{Deserialize, Serialize};

/// A modal view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct View {
    /// Routes its submission (`Bot::on_modal_submit`).
    pub callback_id: String,
    /// The title (plain text).
    pub title: String,
    /// The submit button's label; `None`: the platform's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit: Option<String>,
    /// The close button's label; `None`: the platform's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<String>,
    /// Text carried to the submission unchanged (a channel id, a record id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
    /// The inputs, top to bottom.
    pub inputs: Vec<Input>,
}

impl View {
    /// A view with no inputs yet.
    pub fn new(callback_id: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            callback_id: callback_id.into(),
            title: title.into(),
            submit: None,
            close: None,
            metadata: None,
            inputs: Vec::new(),
        }
    }

    /// With a submit button label.
    #[must_use]
    pub fn submit(mut self, label: impl Into<String>) -> Self {
        self.submit = Some(label.into());
        self
    }

    /// With a close button label.
    #[must_use]
    pub fn close(mut self, label: impl Into<String>) -> Self {
        self.close = Some(label.into());
        self
    }

    /// With metadata carried to the submission.
    #[must_use]
    pub fn metadata(mut self, metadata: impl Into<String>) -> Self {
        self.metadata = Some(metadata.into());
        self
    }

    /// With one more input.
    #[must_use]
    pub fn input(mut self, input: Input) -> Self {
        self.inputs.push(input);
        self
    }
}

/// One labelled input of a [`View`]; its value comes back under
/// (`block_id`, `action_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Input {
    /// The block's id: where field errors point.
    pub block_id: String,
    /// The element's id.
    pub action_id: String,
    /// The label (plain text).
    pub label: String,
    /// Whether the form submits without it.
    #[serde(default)]
    pub optional: bool,
    /// Help text under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// What kind of input.
    pub element: InputElement,
}

/// The element of an [`Input`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum InputElement {
    /// A text field.
    PlainText {
        /// Several lines.
        #[serde(default)]
        multiline: bool,
        /// Shown while empty.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        placeholder: Option<String>,
        /// The text at first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initial: Option<String>,
    },
    /// One of fixed options.
    Select {
        /// The options: (label, value).
        options: Vec<(String, String)>,
        /// The value chosen at first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initial: Option<String>,
    },
    /// Any of fixed options.
    Checkboxes {
        /// The options: (label, value).
        options: Vec<(String, String)>,
        /// The values checked at first.
        #[serde(default)]
        initial: Vec<String>,
    },
}

impl Input {
    fn new(block_id: &str, action_id: &str, label: &str, element: InputElement) -> Self {
        Self {
            block_id: block_id.to_owned(),
            action_id: action_id.to_owned(),
            label: label.to_owned(),
            optional: false,
            hint: None,
            element,
        }
    }

    /// A one-line text field.
    pub fn text(block_id: &str, action_id: &str, label: &str) -> Self {
        Self::new(
            block_id,
            action_id,
            label,
            InputElement::PlainText {
                multiline: false,
                placeholder: None,
                initial: None,
            },
        )
    }

    /// A select with no options yet.
    pub fn select(block_id: &str, action_id: &str, label: &str) -> Self {
        Self::new(
            block_id,
            action_id,
            label,
            InputElement::Select {
                options: Vec::new(),
                initial: None,
            },
        )
    }

    /// Checkboxes with no options yet.
    pub fn checkboxes(block_id: &str, action_id: &str, label: &str) -> Self {
        Self::new(
            block_id,
            action_id,
            label,
            InputElement::Checkboxes {
                options: Vec::new(),
                initial: Vec::new(),
            },
        )
    }

    /// With one more option (select, checkboxes; ignored by a text field).
    #[must_use]
    pub fn option(mut self, label: impl Into<String>, value: impl Into<String>) -> Self {
        match &mut self.element {
            InputElement::Select { options, .. } | InputElement::Checkboxes { options, .. } => {
                options.push((label.into(), value.into()));
            }
            InputElement::PlainText { .. } => {}
        }
        self
    }

    /// With a value at first: the text, the selected option's value, or one
    /// more checked value.
    #[must_use]
    pub fn initial(mut self, value: impl Into<String>) -> Self {
        let value = value.into();
        match &mut self.element {
            InputElement::PlainText { initial, .. } | InputElement::Select { initial, .. } => {
                *initial = Some(value);
            }
            InputElement::Checkboxes { initial, .. } => initial.push(value),
        }
        self
    }

    /// A text field of several lines.
    #[must_use]
    pub fn multiline(mut self) -> Self {
        if let InputElement::PlainText { multiline, .. } = &mut self.element {
            *multiline = true;
        }
        self
    }

    /// With a placeholder (text fields).
    #[must_use]
    pub fn placeholder(mut self, text: impl Into<String>) -> Self {
        if let InputElement::PlainText { placeholder, .. } = &mut self.element {
            *placeholder = Some(text.into());
        }
        self
    }

    /// Not required.
    #[must_use]
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// With help text.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// How a modal-submit handler answers the submission (Slack
/// `response_action`), through the runtime's `Ctx::answer_modal`. Not
/// answering closes the modal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ModalAnswer {
    /// Keep the modal open, with these errors: (block id, message).
    Errors(Vec<(String, String)>),
    /// Replace the modal with this view.
    Update(View),
    /// Push this view on top of the modal.
    Push(View),
    /// Close every view of the stack.
    Clear,
}

impl ModalAnswer {
    /// Field errors: (block id, message) pairs.
    pub fn errors<I, B, M>(errors: I) -> Self
    where
        I: IntoIterator<Item = (B, M)>,
        B: Into<String>,
        M: Into<String>,
    {
        Self::Errors(
            errors
                .into_iter()
                .map(|(b, m)| (b.into(), m.into()))
                .collect(),
        )
    }
}
