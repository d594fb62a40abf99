//! The axum example of `docs/attributes/resilient.md` ("Traits behind
//! `dyn`"), compiled and run here: it needs axum, which the facade's own
//! doctests do not build (see `extras/Cargo.toml`). The page shows it as
//! `ignore`; the second test checks that the page and this file hold the
//! same code.

// As in a doctest, parts of the example are there to be read, not used.
#![allow(dead_code, unreachable_pub)]

#[test]
fn the_axum_example_of_the_resilient_page_runs() -> Result<(), Box<dyn std::error::Error>> {
    // BEGIN doc
    use std::sync::Arc;

    use async_trait::async_trait;
    use axum::extract::{Path, State};
    use axum::http::StatusCode;
    use axum::{Router, routing::get};
    use bulkhead::{Registry, Rejection, resilient};

    #[derive(Debug)]
    pub enum RepoError {
        Busy(Rejection),
        Db(String),
    }
    impl From<Rejection> for RepoError {
        fn from(r: Rejection) -> Self {
            RepoError::Busy(r)
        }
    }

    #[resilient]
    #[async_trait]
    pub trait Users: Send + Sync {
        #[bulkhead(name = "users-db", max_concurrent = 10, max_wait = "50ms")]
        #[retry(max_attempts = 2, wait = "20ms")]
        async fn name(&self, id: u64) -> Result<String, RepoError>;
    }

    struct Postgres;

    #[async_trait]
    impl Users for Postgres {
        async fn name(&self, id: u64) -> Result<String, RepoError> {
            Ok(format!("user {id}"))
        }
    }

    async fn user(
        State(users): State<Arc<dyn Users>>,
        Path(id): Path<u64>,
    ) -> Result<String, StatusCode> {
        users.name(id).await.map_err(|error| match error {
            RepoError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
            RepoError::Db(_) => StatusCode::BAD_GATEWAY,
        })
    }

    let registry = Registry::new();
    let users: Arc<dyn Users> = Arc::new(ResilientUsers::new(Postgres, &registry)?);
    let app = Router::new()
        .route("/users/{id}", get(user))
        .with_state(users);

    // One request through the router, as a server would send it.
    use tower::ServiceExt;
    let request = axum::http::Request::get("/users/7").body(axum::body::Body::empty())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let response = runtime.block_on(app.oneshot(request))?;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(registry.bulkhead("users-db")?.concurrent_calls(), 0);
    // END doc
    Ok(())
}

#[test]
fn the_page_shows_the_code_this_test_runs() {
    let page = include_str!("../../docs/attributes/resilient.md");
    let start = page
        .find("```rust,ignore\nuse std::sync::Arc;\n\nuse async_trait::async_trait;\nuse axum::")
        .expect("the axum example on the page");
    let code = &page[start + "```rust,ignore\n".len()..];
    let code = &code[..code.find("```").expect("the end of the example")];
    let shown: Vec<&str> = code
        .lines()
        .filter(|line| !line.starts_with("# "))
        .collect();
    let this = include_str!("dyn_axum.rs");
    let begin = this.find("    // BEGIN doc\n").expect("BEGIN") + "    // BEGIN doc\n".len();
    let end = this.find("    // END doc").expect("END");
    let run: Vec<&str> = this[begin..end]
        .lines()
        .map(|line| line.strip_prefix("    ").unwrap_or(line))
        .collect();
    assert_eq!(
        shown, run,
        "docs/attributes/resilient.md and extras/tests/dyn_axum.rs differ"
    );
}
