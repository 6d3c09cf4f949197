//! Reactions by name: the portable `react("eyes")` as Telegram's emoji.
//! Telegram takes only its own set of reaction emoji
//! ([ReactionTypeEmoji](https://core.telegram.org/bots/api#reactiontypeemoji));
//! a name outside it is refused before any call.

/// The reaction emoji Telegram takes, with the names chat-rs knows them by
/// (Slack's where there is one).
const TABLE: &[(&str, &str)] = &[
    ("+1", "👍"),
    ("thumbsup", "👍"),
    ("-1", "👎"),
    ("thumbsdown", "👎"),
    ("heart", "❤"),
    ("fire", "🔥"),
    ("smiling_face_with_3_hearts", "🥰"),
    ("clap", "👏"),
    ("grin", "😁"),
    ("thinking_face", "🤔"),
    ("exploding_head", "🤯"),
    ("scream", "😱"),
    ("face_with_symbols_on_mouth", "🤬"),
    ("cry", "😢"),
    ("tada", "🎉"),
    ("star-struck", "🤩"),
    ("face_vomiting", "🤮"),
    ("hankey", "💩"),
    ("pray", "🙏"),
    ("ok_hand", "👌"),
    ("dove_of_peace", "🕊"),
    ("clown_face", "🤡"),
    ("yawning_face", "🥱"),
    ("woozy_face", "🥴"),
    ("heart_eyes", "😍"),
    ("whale", "🐳"),
    ("heart_on_fire", "❤\u{200d}🔥"),
    ("new_moon_with_face", "🌚"),
    ("hotdog", "🌭"),
    ("100", "💯"),
    ("rolling_on_the_floor_laughing", "🤣"),
    ("zap", "⚡"),
    ("banana", "🍌"),
    ("trophy", "🏆"),
    ("broken_heart", "💔"),
    ("face_with_raised_eyebrow", "🤨"),
    ("neutral_face", "😐"),
    ("strawberry", "🍓"),
    ("champagne", "🍾"),
    ("kiss", "💋"),
    ("middle_finger", "🖕"),
    ("smiling_imp", "😈"),
    ("sleeping", "😴"),
    ("sob", "😭"),
    ("nerd_face", "🤓"),
    ("ghost", "👻"),
    ("technologist", "👨\u{200d}💻"),
    ("eyes", "👀"),
    ("jack_o_lantern", "🎃"),
    ("see_no_evil", "🙈"),
    ("innocent", "😇"),
    ("fearful", "😨"),
    ("handshake", "🤝"),
    ("writing_hand", "✍"),
    ("hugging_face", "🤗"),
    ("saluting_face", "🫡"),
    ("santa", "🎅"),
    ("christmas_tree", "🎄"),
    ("snowman", "☃"),
    ("nail_care", "💅"),
    ("zany_face", "🤪"),
    ("moyai", "🗿"),
    ("cool", "🆒"),
    ("cupid", "💘"),
    ("hear_no_evil", "🙉"),
    ("unicorn_face", "🦄"),
    ("kissing_heart", "😘"),
    ("pill", "💊"),
    ("speak_no_evil", "🙊"),
    ("sunglasses", "😎"),
    ("space_invader", "👾"),
    ("man-shrugging", "🤷\u{200d}♂"),
    ("shrug", "🤷"),
    ("woman-shrugging", "🤷\u{200d}♀"),
    ("rage", "😡"),
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
    let name = name.trim().trim_matches(':');
    TABLE
        .iter()
        .find(|(n, e)| *n == name || *e == name)
        .map(|(_, e)| *e)
}

/// The name of a Telegram reaction emoji, the emoji itself when it has
/// none here (what a handler's `Reaction::emoji` holds).
pub fn name(emoji: &str) -> String {
    TABLE
        .iter()
        .find(|(_, e)| *e == emoji)
        .map_or_else(|| emoji.to_owned(), |(n, _)| (*n).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_emoji_map_both_ways() {
        for (n, e) in TABLE {
            assert_eq!(reaction(n), Some(*e), "{n}");
            assert_eq!(reaction(&name(e)), Some(*e), "{e}");
        }
        assert_eq!(name("🦖"), "🦖");
    }
}
