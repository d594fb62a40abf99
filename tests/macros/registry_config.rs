//! Wrapped traits under the registry's configuration: a reload changes the
//! limit of a live wrapper, and a bulkhead's `resource` key is checked
//! against the resource's budget when the wrapper is built.

mod wrapped {
    use bulkhead::{Registry, Rejection, resilient};

    #[derive(Debug)]
    enum ReportError {
        Busy,
    }

    impl From<Rejection> for ReportError {
        fn from(_: Rejection) -> Self {
            ReportError::Busy
        }
    }

    #[resilient]
    trait Reports: Send + Sync {
        #[bulkhead(name = "reports", max_concurrent = 2)]
        fn render(&self, id: u32) -> Result<u32, ReportError>;
    }

    struct Renderer;

    impl Reports for Renderer {
        fn render(&self, id: u32) -> Result<u32, ReportError> {
            Ok(id)
        }
    }

    #[test]
    fn a_reload_changes_the_limit_of_a_live_wrapped_trait() {
        let registry = Registry::builder()
            .config_toml("[bulkhead.instances.reports]\nmax_concurrent = 1")
            .unwrap()
            .build();
        let reports = ResilientReports::new(Renderer, &registry).unwrap();
        let handle = registry.bulkhead("reports").unwrap();
        assert_eq!(
            handle.max_concurrent(),
            1,
            "the instance value is above the attribute's 2"
        );
        let held = handle.bulkhead().try_enter().unwrap();
        assert!(matches!(reports.render(1), Err(ReportError::Busy)));

        let changes = registry
            .reload_toml("[bulkhead.instances.reports]\nmax_concurrent = 3")
            .unwrap();
        assert!(changes.iter().all(|c| c.applied), "{changes:?}");
        assert_eq!(
            reports.render(2).unwrap(),
            2,
            "the live wrapper sees the new limit"
        );
        assert_eq!(handle.max_concurrent(), 3);
        drop(held);
    }
}

mod attribute {
    use bulkhead::{Registry, Rejection, resilient};

    #[derive(Debug)]
    enum DbError {
        Busy,
    }

    impl From<Rejection> for DbError {
        fn from(_: Rejection) -> Self {
            DbError::Busy
        }
    }

    #[resilient]
    trait Orders: Send + Sync {
        #[bulkhead(name = "orders", max_concurrent = 6, resource = "db")]
        fn place(&self) -> Result<(), DbError>;
    }

    #[resilient]
    trait Reports: Send + Sync {
        #[bulkhead(name = "reports", max_concurrent = 5, resource = "db")]
        fn render(&self) -> Result<(), DbError>;
    }

    struct Db;

    impl Orders for Db {
        fn place(&self) -> Result<(), DbError> {
            Ok(())
        }
    }

    impl Reports for Db {
        fn render(&self) -> Result<(), DbError> {
            Ok(())
        }
    }

    #[test]
    fn the_resource_attribute_key_is_checked_against_the_budget_at_new() {
        let registry = Registry::new();
        registry.resource("db", 10).unwrap();
        let orders = ResilientOrders::new(Db, &registry).unwrap();
        assert!(orders.place().is_ok());
        let err = ResilientReports::new(Db, &registry).err().unwrap();
        assert_eq!(err.code(), "REG-010");
        assert!(err.to_string().contains("orders (6), reports (5)"), "{err}");
        assert!(matches!(orders.place(), Ok(())));
        // The refused wrapper was never built; the delegate itself still works.
        assert!(matches!(Db.render(), Ok(())));
        let _ = DbError::Busy;
    }
}
