use super::*;

#[test]
fn empty_file_is_the_defaults() {
    let c = Config::from_toml("").unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.requester.ack_every, 16);
    assert_eq!(c.report.udp_port, 40040);
    assert_eq!(c.postcard.hops, 5);
}

#[test]
fn overrides_and_errors() {
    let c = Config::from_toml(
        "[report]\ndta_header = \"compact\"\nkeywrite_data_len = 12\n[requester]\nwindow = 8\n",
    )
    .unwrap();
    assert_eq!(c.report.dta_header, HeaderForm::Compact);
    assert_eq!(c.report.keywrite_data_len, 12);
    assert_eq!(c.requester.window, 8);

    assert_eq!(
        Config::from_toml("[requester]\nack_every = 0\n"),
        Err(ConfigError::Invalid {
            field: "requester.ack_every",
            value: 0,
            why: "at least 1"
        })
    );
    assert!(matches!(
        Config::from_toml("[report]\nkeywrite_data_len = 8\n"),
        Err(ConfigError::Report(_))
    ));
    assert!(matches!(
        Config::from_toml("[requester]\nwindwo = 8\n"),
        Err(ConfigError::Toml(_))
    ));
    assert_eq!(
        Config::from_toml("[postcard]\nhops = 9\n"),
        Err(ConfigError::Invalid {
            field: "postcard.hops",
            value: 9,
            why: "1..=8"
        })
    );
    // Each field names itself (an ECN of 4 used to be reported as "dscp = 0").
    assert_eq!(
        Config::from_toml("[local]\necn = 4\n"),
        Err(ConfigError::Invalid {
            field: "local.ecn",
            value: 4,
            why: "2 bits"
        })
    );
    assert!(matches!(
        Config::from_toml("[local]\ndscp = 64\n"),
        Err(ConfigError::Invalid {
            field: "local.dscp",
            value: 64,
            ..
        })
    ));
    // A source port below the RoCE v2 range would have every frame dropped by the responder.
    assert!(matches!(
        Config::from_toml("[local]\nudp_src_port_base = 4791\n"),
        Err(ConfigError::Invalid {
            field: "local.udp_src_port_base",
            value: 4791,
            ..
        })
    ));
    assert!(Config::from_toml("[local]\nudp_src_port_base = 49152\n").is_ok());
    // Sizes have upper bounds with a clear error, not an allocation failure at start.
    for (text, field) in [
        (
            "[postcard]\ncache_size = 1152921504606846976\n",
            "postcard.cache_size",
        ),
        (
            "[requester]\nqueue_capacity = 4294967295\n",
            "requester.queue_capacity",
        ),
        ("[requester]\nwindow = 8388607\n", "requester.window"),
        (
            "[key_increment]\ncoalesce_capacity = 1099511627776\n",
            "key_increment.coalesce_capacity",
        ),
        (
            "[sequence]\nmax_reporters = 1099511627776\n",
            "sequence.max_reporters",
        ),
        ("[sketch]\ncolumn_batch = 100000\n", "sketch.column_batch"),
    ] {
        match Config::from_toml(text) {
            Err(ConfigError::Invalid { field: f, .. }) => assert_eq!(f, field, "{text}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}

/// Issue 26, item 9: reports (or INT reports) on RoCEv2's port took every ACK from the collector for a
/// report; the ports are refused at load, and so is INT on the DTA report port.
#[test]
fn report_ports_that_collide_with_roce_or_each_other_are_refused() {
    let roce = "not 4791, RoCEv2's port, where the collector's responses arrive";
    for (text, field) in [
        ("[report]\nudp_port = 4791\n", "report.udp_port"),
        ("[int]\nenabled = true\nudp_port = 4791\n", "int.udp_port"),
        (
            "[int]\nenabled = true\nmd_udp_port = 4791\n",
            "int.md_udp_port",
        ),
    ] {
        let err = Config::from_toml(text).unwrap_err();
        assert_eq!(
            err,
            ConfigError::Invalid {
                field,
                value: 4791,
                why: roce
            },
            "{text}"
        );
        assert_eq!(
            err.to_string(),
            format!("configuration: {field} = 4791 is invalid ({roce})")
        );
    }
    assert_eq!(
        Config::from_toml("[report]\nudp_port = 40000\n[int]\nenabled = true\nudp_port = 40000\n")
            .unwrap_err()
            .to_string(),
        "configuration: int.udp_port = 40000 is invalid (not the DTA report port)"
    );
    // INT off: its port is not listened on, so it collides with nothing.
    assert!(Config::from_toml("[int]\nudp_port = 4791\n").is_ok());
}
