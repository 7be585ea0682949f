//! The macros that write [`super::App`]'s one-line methods: a request handed to
//! [`super::current::Current`], an answer read from [`super::now::Now`], input handed to the
//! view shown.

/// App methods that hand a request to [`current::Current`]'s method of the same name (its
/// documentation is there).
macro_rules! to_current {
    ($($vis:vis fn $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {
        $(
            #[allow(missing_docs)]
            $vis fn $name(&mut self $(, $arg: $ty)*) $(-> $ret)? {
                self.cur().$name($($arg),*)
            }
        )*
    };
}

/// App methods that answer from [`now::Now`]'s method of the same name (documented there).
macro_rules! from_now {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(
            #[must_use]
            #[allow(missing_docs)]
            pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                self.now().$name($($arg),*)
            }
        )*
    };
}

/// App methods that hand input to the view shown through [`DrawableView`].
macro_rules! to_view {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self $(, $arg: $ty)*) {
                self.with_view(Gate::closed(), |_, v| v.$name($($arg),*));
            }
        )*
    };
}
