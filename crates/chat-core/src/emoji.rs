//! Emoji by name: the names a portable `react("eyes")` takes (Slack's, the
//! lingua franca of chat reactions) and the emoji they stand for, for
//! platforms whose reactions are the emoji themselves (Telegram, WhatsApp,
//! GitHub's few).
//!
//! ```
//! use chat_core::emoji;
//! assert_eq!(emoji::char_of(":eyes:"), Some("👀"));
//! assert_eq!(emoji::char_of("👀"), Some("👀"));
//! assert_eq!(emoji::name_of("👀"), Some("eyes"));
//! assert_eq!(emoji::char_of("no_such_emoji"), None);
//! ```

/// Names and their emoji; the first name of an emoji is its name.
const NAMES: &[(&str, &str)] = &[
    ("white_check_mark", "✅"),
    ("heavy_check_mark", "✔"),
    ("x", "❌"),
    ("warning", "⚠"),
    ("rocket", "🚀"),
    ("hourglass", "⌛"),
    ("hourglass_flowing_sand", "⏳"),
    ("memo", "📝"),
    ("bulb", "💡"),
    ("question", "❓"),
    ("exclamation", "❗"),
    ("smile", "😄"),
    ("laughing", "😆"),
    ("wave", "👋"),
    ("raised_hands", "🙌"),
    ("muscle", "💪"),
    ("star", "⭐"),
    ("sparkles", "✨"),
    ("confused", "😕"),
    ("thumbs_up", "👍"),
    ("thumbs_down", "👎"),
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

/// The emoji `name` stands for (with or without colons); an emoji given
/// itself comes back as it is (when this table knows it).
pub fn char_of(name: &str) -> Option<&'static str> {
    let name = name.trim().trim_matches(':');
    NAMES
        .iter()
        .find(|(n, e)| *n == name || *e == name)
        .map(|(_, e)| *e)
}

/// The name of `emoji`, when the table knows it.
pub fn name_of(emoji: &str) -> Option<&'static str> {
    NAMES.iter().find(|(_, e)| *e == emoji).map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_finds_its_emoji_and_back() {
        for (n, e) in NAMES {
            assert_eq!(char_of(n), Some(*e), "{n}");
            let name = name_of(e).unwrap_or_default();
            assert_eq!(char_of(name), Some(*e), "{e}");
        }
    }
}
