//! Installing echo-bot in a workspace through its install flow, as a browser
//! does: `GET /slack/install`, the workspace approving on `FakeSlackOAuth`'s
//! authorize page, and `GET /slack/oauth/callback` with the code, the
//! `state` and the install cookie.

use chat_runtime::BoxError;
use chat_testkit::FakeSlackOAuth;

use super::{Answer, EchoBot};

/// One install, step by step.
#[derive(Debug, Clone)]
pub struct SlackInstall {
    /// What `GET /slack/install` answered (a `302` to the authorize page).
    pub install: Answer,
    /// Where it sent the browser.
    pub authorize_url: String,
    /// The `state` it carries.
    pub state: String,
    /// The install cookie (`name=value`), if it set one.
    pub cookie: Option<String>,
    /// Where approving sent the browser back: the callback with a code.
    pub callback_url: String,
    /// What the callback answered (`200` once installed).
    pub callback: Answer,
}

/// Installs echo-bot in workspace `team` of `fake`. An `Err` says which step
/// did not lead to the next (no redirect, the authorize page refused).
pub async fn install_slack(
    bot: &EchoBot,
    fake: &FakeSlackOAuth,
    team: &str,
) -> Result<SlackInstall, BoxError> {
    let install = bot.get(crate::slack::INSTALL_PATH).await?;
    let authorize_url = install
        .header("location")
        .filter(|_| install.status == 302)
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "GET {} answered {} {:?}, not a redirect",
                crate::slack::INSTALL_PATH,
                install.status,
                install.body
            )
        })?;
    let state = query_value(&authorize_url, "state")
        .ok_or_else(|| format!("the authorize URL has no state: {authorize_url}"))?;
    let cookie = install
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_owned());
    let callback_url = fake
        .approve(&authorize_url, team)
        .map_err(|e| format!("the authorize page refused the install: {e}"))?;
    let headers: Vec<(&str, &str)> = cookie.iter().map(|c| ("cookie", c.as_str())).collect();
    let callback = bot.get_url(&callback_url, &headers).await?;
    Ok(SlackInstall {
        install,
        authorize_url,
        state,
        cookie,
        callback_url,
        callback,
    })
}

/// The raw value of `name` in `url`'s query (states and codes need no
/// decoding).
pub fn query_value(url: &str, name: &str) -> Option<String> {
    let (_, query) = url.split_once('?')?;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_found() {
        let url = "http://x/cb?code=c-1&state=a.b";
        assert_eq!(query_value(url, "state").as_deref(), Some("a.b"));
        assert_eq!(query_value(url, "code").as_deref(), Some("c-1"));
        assert_eq!(query_value(url, "team"), None);
        assert_eq!(query_value("http://x/cb", "state"), None);
    }
}
