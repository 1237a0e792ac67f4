//! `solver.toml`: the shipped file is exactly the built-in defaults, and mistakes name their place.

use precsolve::config::RawConfig;

#[test]
fn shipped_solver_toml_lists_every_key_with_the_builtin_default() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/solver.toml");
    let shipped = RawConfig::load(std::path::Path::new(path)).unwrap();
    assert_eq!(shipped, RawConfig::default());
    // Every key of the serialized defaults appears in the file (none left implicit).
    let text = std::fs::read_to_string(path).unwrap();
    let defaults = toml::to_string(&RawConfig::default()).unwrap();
    for line in defaults.lines().filter(|l| l.contains(" = ")) {
        let key = line.split(" = ").next().unwrap();
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{key} = "))),
            "solver.toml lacks `{key}`"
        );
    }
    // And every key has a comment line right above it.
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.contains(" = ") {
            assert!(
                lines[i - 1].starts_with('#'),
                "key on line {} has no comment",
                i + 1
            );
        }
    }
}

#[test]
fn misspelt_key_is_an_error_with_line_and_column() {
    let text = "[solve]\ntol = 1e-9\nmax_iters = 10\n";
    let err = RawConfig::parse(text, "my.toml").unwrap_err().to_string();
    assert!(err.contains("my.toml"), "{err}");
    assert!(err.contains("line 3, column 1"), "{err}");
    assert!(err.contains("max_iters"), "{err}");
}

#[test]
fn unknown_section_and_bad_values_are_errors() {
    let err = RawConfig::parse("[solver]\ntol = 1e-9\n", "x.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1"), "{err}");
    let err = RawConfig::parse("[solve]\nmethod = \"minres\"\n", "x.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 2") && err.contains("minres"), "{err}");
    let err = RawConfig::parse("[solve]\ntol = 2.0\n", "x.toml")
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("tol"), "{err}");
    let err = RawConfig::parse("[solve]\nmax_iter = 0\n", "x.toml")
        .unwrap()
        .validate()
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_iter"), "{err}");
}

#[test]
fn partial_file_keeps_other_defaults() {
    let raw = RawConfig::parse("[solve]\ntol = 1e-12\n", "x.toml").unwrap();
    let config = raw.validate().unwrap();
    assert_eq!(config.params.tol, 1e-12);
    assert_eq!(config.params.max_iter, 30_000);
}

#[test]
fn ilu_shift_is_auto_none_or_a_number() {
    use precsolve::precond::ilu0::IluShift;
    let parse = |text: &str| {
        RawConfig::parse(
            &format!("[solve]\nprecond = \"ilu0\"\nilu_shift = {text}\n"),
            "x.toml",
        )
    };
    for (text, want) in [
        ("\"auto\"", IluShift::Auto),
        ("\"none\"", IluShift::None),
        ("0", IluShift::None),
        ("0.0", IluShift::None),
        ("1e-8", IluShift::Fixed(1e-8)),
    ] {
        let raw = parse(text).unwrap();
        assert_eq!(raw.solve.ilu_shift, want, "{text}");
        assert_eq!(raw.validate().unwrap().ilu_shift, want, "{text}");
    }
    for (text, why) in [
        ("-1.0", "must be auto, 0 or none"),
        ("\"often\"", "is not auto"),
    ] {
        let err = parse(text).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains(why), "{err}");
    }
    // A fixed shift without ILU(0) is a mistake; auto (the default) and none are not.
    let fixed = RawConfig::parse("[solve]\nilu_shift = 1e-8\n", "x.toml").unwrap();
    assert!(
        fixed
            .validate()
            .unwrap_err()
            .to_string()
            .contains("ilu_shift")
    );
    let none = RawConfig::parse("[solve]\nilu_shift = \"none\"\n", "x.toml").unwrap();
    assert!(none.validate().is_ok());
}
