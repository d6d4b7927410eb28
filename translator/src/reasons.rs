//! The `reasons!` macro, shared by the engine's counters (`counters.rs`) and the INT front end's
//! (`int/counters.rs`): in a module of its own so that neither counters module imports the other's.

/// Declares a reason enum with its `ALL` list and metric labels from one list, so a reason cannot be
/// added without its counter slot (the counters are arrays sized by `ALL`) and its label. Used for
/// the engine's [`DropReason`](crate::DropReason) and for the INT front end's
/// [`IntDrop`](crate::int::IntDrop).
macro_rules! reasons {
    ($(#[doc = $edoc:expr])* $enum:ident { $($(#[doc = $doc:expr])* $name:ident => $label:literal,)+ }) => {
        $(#[doc = $edoc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $enum {
            $($(#[doc = $doc])* $name,)+
        }

        impl $enum {
            /// Every reason, in counter order.
            pub const ALL: [$enum; [$($enum::$name),+].len()] = [$($enum::$name),+];

            /// A metrics label.
            pub const fn label(self) -> &'static str {
                match self {
                    $($enum::$name => $label,)+
                }
            }
        }
    };
}
pub(crate) use reasons;
