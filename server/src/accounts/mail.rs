//! Sign-in e-mail: through SMTP (lettre) when `[smtp]` is configured, otherwise to a local development
//! outbox (a file, and the log), so that `serve` works with no set-up.

use std::io::Write;
use std::path::PathBuf;

use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::{Mail, Smtp};

pub enum Mailer {
    Smtp {
        transport: AsyncSmtpTransport<Tokio1Executor>,
        from: Mailbox,
    },
    /// Development only: messages are appended to this file and logged.
    Outbox(PathBuf),
}

impl Mailer {
    pub fn new(smtp: Option<&Smtp>, mail: &Mail) -> Result<Mailer, String> {
        let Some(s) = smtp else {
            return Ok(Mailer::Outbox(PathBuf::from(&mail.outbox_path)));
        };
        let mut b = match s.tls.as_str() {
            "none" => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&s.host),
            "starttls" => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&s.host)
                .map_err(|e| format!("smtp: {e}"))?,
            "tls" => AsyncSmtpTransport::<Tokio1Executor>::relay(&s.host)
                .map_err(|e| format!("smtp: {e}"))?,
            other => {
                return Err(format!(
                    "smtp.tls must be none, starttls or tls, not {other}"
                ));
            }
        }
        .port(s.port);
        if let (Some(u), Some(p)) = (&s.username, &s.password) {
            b = b.credentials(Credentials::new(u.clone(), p.clone()));
        }
        let from = s
            .from
            .parse::<Mailbox>()
            .map_err(|e| format!("smtp.from: {e}"))?;
        Ok(Mailer::Smtp {
            transport: b.build(),
            from,
        })
    }

    pub fn describe(&self) -> String {
        match self {
            Mailer::Smtp { .. } => "SMTP".into(),
            Mailer::Outbox(p) => format!(
                "DEVELOPMENT OUTBOX {} (no [smtp] configured; sign-in codes are written there and logged)",
                p.display()
            ),
        }
    }

    /// Sends the sign-in code. The code appears only in the message (and, in development, the outbox).
    pub async fn send_code(&self, to: &str, code: &str, ttl_seconds: i64) -> Result<(), String> {
        let minutes = (ttl_seconds / 60).max(1);
        let subject = format!("Your socialsearch sign-in code: {code}");
        let body = format!(
            "Your sign-in code is {code}\n\nIt is valid for {minutes} minutes. If you did not ask for it, ignore this e-mail.\n"
        );
        match self {
            Mailer::Smtp { transport, from } => {
                let to: Mailbox = to.parse().map_err(|e| format!("address: {e}"))?;
                let msg = Message::builder()
                    .from(from.clone())
                    .to(to)
                    .subject(subject)
                    .body(body)
                    .map_err(|e| format!("message: {e}"))?;
                transport
                    .send(msg)
                    .await
                    .map(|_| ())
                    .map_err(|e| format!("smtp: {e}"))
            }
            Mailer::Outbox(path) => {
                let line =
                    serde_json::json!({ "to": to, "subject": subject, "code": code, "body": body });
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    let _ = std::fs::create_dir_all(dir);
                }
                // One message, one `write` of a whole line: `writeln!` would write the line and
                // its newline separately, and concurrent sign-ins would interleave their lines.
                let mut text = line.to_string();
                text.push('\n');
                static OUTBOX: std::sync::Mutex<()> = std::sync::Mutex::new(());
                let _one_at_a_time = OUTBOX.lock().unwrap_or_else(|p| p.into_inner());
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("outbox {}: {e}", path.display()))?;
                f.write_all(text.as_bytes())
                    .map_err(|e| format!("outbox {}: {e}", path.display()))?;
                tracing::warn!(
                    "DEVELOPMENT OUTBOX (no SMTP configured): sign-in code for {to} is {code}"
                );
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Concurrent sign-ins each leave one whole line in the development outbox.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_messages_never_share_a_line() {
        let dir = std::env::temp_dir().join(format!("socialsearch-outbox-{}", std::process::id()));
        let path = dir.join("outbox.log");
        let _ = std::fs::remove_file(&path);
        let mailer = std::sync::Arc::new(Mailer::Outbox(path.clone()));
        let sends: Vec<_> = (0..64)
            .map(|i| {
                let mailer = mailer.clone();
                tokio::spawn(async move {
                    mailer
                        .send_code(&format!("u{i}@example.com"), "123456", 600)
                        .await
                })
            })
            .collect();
        for send in sends {
            send.await.expect("task").expect("sent");
        }
        let text = std::fs::read_to_string(&path).expect("outbox written");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 64);
        for line in lines {
            let message: serde_json::Value =
                serde_json::from_str(line).expect("one message a line");
            assert!(
                message["to"]
                    .as_str()
                    .is_some_and(|t| t.ends_with("@example.com"))
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
