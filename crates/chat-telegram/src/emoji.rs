//! Reactions by name: the portable `react("eyes")` as Telegram's emoji.
//! Telegram takes only its own set of reaction emoji
//! ([ReactionTypeEmoji](https://core.telegram.org/bots/api#reactiontypeemoji));
//! a name outside it is refused before any call.

/// The reaction emoji Telegram takes.
const REACTIONS: &[&str] = &[
    "👍",
    "👎",
    "❤",
    "🔥",
    "🥰",
    "👏",
    "😁",
    "🤔",
    "🤯",
    "😱",
    "🤬",
    "😢",
    "🎉",
    "🤩",
    "🤮",
    "💩",
    "🙏",
    "👌",
    "🕊",
    "🤡",
    "🥱",
    "🥴",
    "😍",
    "🐳",
    "❤\u{200d}🔥",
    "🌚",
    "🌭",
    "💯",
    "🤣",
    "⚡",
    "🍌",
    "🏆",
    "💔",
    "🤨",
    "😐",
    "🍓",
    "🍾",
    "💋",
    "🖕",
    "😈",
    "😴",
    "😭",
    "🤓",
    "👻",
    "👨\u{200d}💻",
    "👀",
    "🎃",
    "🙈",
    "😇",
    "😨",
    "🤝",
    "✍",
    "🤗",
    "🫡",
    "🎅",
    "🎄",
    "☃",
    "💅",
    "🤪",
    "🗿",
    "🆒",
    "💘",
    "🙉",
    "🦄",
    "😘",
    "💊",
    "🙊",
    "😎",
    "👾",
    "🤷\u{200d}♂",
    "🤷",
    "🤷\u{200d}♀",
    "😡",
];

/// The Telegram reaction for `name` (a name, with or without colons, or one
/// of Telegram's reaction emoji itself); `None` when Telegram has none.
///
/// ```
/// use chat_telegram::emoji::reaction;
/// assert_eq!(reaction(":eyes:"), Some("👀"));
/// assert_eq!(reaction("👍"), Some("👍"));
/// assert_eq!(reaction("white_check_mark"), None);
/// ```
pub fn reaction(name: &str) -> Option<&'static str> {
    let trimmed = name.trim();
    let emoji = chat_core::emoji::char_of(trimmed)
        .or_else(|| REACTIONS.iter().find(|e| **e == trimmed).copied())?;
    REACTIONS.contains(&emoji).then_some(emoji)
}

/// The name of a Telegram reaction emoji, the emoji itself when it has
/// none (what a handler's `Reaction::emoji` holds).
pub fn name(emoji: &str) -> String {
    chat_core::emoji::name_of(emoji).map_or_else(|| emoji.to_owned(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_telegram_reaction_has_a_name_that_finds_it() {
        for e in REACTIONS {
            assert_eq!(reaction(&name(e)), Some(*e), "{e}");
        }
        assert_eq!(name("🦖"), "🦖");
    }
}
