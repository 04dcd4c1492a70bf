//! Accounts: looked up by address, created on first sign-in or by an operator.

use super::credits::grant_tx;
use super::{Accounts, AccountsResult, KeyView, secrets};
use crate::db::{DbResult, WriteTx, now};

/// An operator's view of an account: balance and keys by prefix.
#[derive(Debug, Clone)]
pub struct AdminView {
    pub email: String,
    pub account_id: String,
    pub balance: i64,
    pub keys: Vec<KeyView>,
}

/// Lower-cased, trimmed e-mail address: one account per address however it is typed.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_ascii_lowercase()
}

/// Whether the address's domain (or a parent domain) is on the maintained disposable list.
pub fn is_disposable(email: &str) -> bool {
    static LIST: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    let list = LIST.get_or_init(|| mailchecker::blacklist().into_iter().collect());
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    let domain = domain.to_ascii_lowercase();
    let mut d = domain.as_str();
    loop {
        if list.contains(d) {
            return true;
        }
        match d.split_once('.') {
            Some((_, rest)) if rest.contains('.') => d = rest,
            _ => return false,
        }
    }
}

impl Accounts {
    /// `(id, balance)` of the account of the address, if there is one.
    pub async fn account_by_email(&self, email: &str) -> AccountsResult<Option<(String, i64)>> {
        Ok(
            sqlx::query_as("SELECT id, balance FROM accounts WHERE email = $1")
                .bind(normalize_email(email))
                .fetch_optional(&self.db.read)
                .await?,
        )
    }

    /// The account of the address, created with `credits` (a `grant` row) when it does not exist.
    pub async fn ensure_account(
        &self,
        email: &str,
        credits: i64,
    ) -> AccountsResult<(String, bool)> {
        let mut tx = self.db.begin_write().await?;
        let r = ensure_account_tx(&mut tx, &normalize_email(email), credits).await?;
        tx.commit().await?;
        Ok(r)
    }

    /// An operator's view of the account of the address, if there is one.
    pub async fn admin_view(&self, email: &str) -> AccountsResult<Option<AdminView>> {
        let Some((account_id, balance)) = self.account_by_email(email).await? else {
            return Ok(None);
        };
        let keys = self.list_keys(&account_id).await?;
        Ok(Some(AdminView {
            email: normalize_email(email),
            account_id,
            balance,
            keys,
        }))
    }
}

/// The account of the address, created with `credits` when it does not exist: `(id, created)`. The
/// insert skips an address that exists (or that a concurrent transaction has just created), so two
/// first sign-ins or `admin` commands for one address never fail on the unique address.
pub(super) async fn ensure_account_tx(
    tx: &mut WriteTx,
    email: &str,
    credits: i64,
) -> DbResult<(String, bool)> {
    let id = secrets::new_id("acc_");
    let created: Option<(String,)> = sqlx::query_as(
        "INSERT INTO accounts (id, email, balance, created_at) VALUES ($1, $2, 0, $3) \
         ON CONFLICT (email) DO NOTHING RETURNING id",
    )
    .bind(id.as_str())
    .bind(email)
    .bind(now())
    .fetch_optional(&mut **tx)
    .await?;
    if created.is_none() {
        let (existing,): (String,) = sqlx::query_as("SELECT id FROM accounts WHERE email = $1")
            .bind(email)
            .fetch_one(&mut **tx)
            .await?;
        return Ok((existing, false));
    }
    if credits > 0 {
        grant_tx(tx, &id, credits, "grant", &format!("signup:{id}")).await?;
    }
    Ok((id, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposable_domains_come_from_the_maintained_list() {
        assert!(is_disposable("a@mailinator.com"));
        assert!(is_disposable("a@sub.mailinator.com"));
        assert!(!is_disposable("a@example.com"));
        assert!(!is_disposable("a@gmail.com"));
    }

    #[test]
    fn addresses_are_one_however_typed() {
        assert_eq!(normalize_email("  A@Example.COM "), "a@example.com");
    }
}
