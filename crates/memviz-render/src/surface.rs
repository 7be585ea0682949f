//! Picking a surface format deliberately, so WebGPU and WebGL2 canvases show the same colours.
//!
//! # How it works
//! Take a plain (non-sRGB) 8-bit format when the surface has one, and render into it as it is:
//! instance colours (sRGB-encoded) are written unchanged and blended in sRGB space, as the
//! browser's 2D canvas, SVG and CSS blend. WebGPU canvases offer only plain formats; WebGL2
//! surfaces offer both, and there the plain one is also the cheap one. wgpu presents an
//! `Rgba8UnormSrgb` WebGL2 surface with a full-screen pass that re-encodes every pixel (a `pow`
//! per channel) and blends into an sRGB target, where a plain one is a framebuffer blit:
//! measured in headless Chromium (SwiftShader), a redraw of the 2 M-allocation tile's scene at
//! 1440 × 900 went from 57–63 ms to 42 ms (docs/query.md). Only when a surface has no plain
//! 8-bit format is an sRGB one taken (the shader then decodes to linear and the hardware
//! re-encodes: opaque colours come out the same; translucent overlays blend in linear light).

/// A surface configuration plus the format to create frame views with and to build the
/// [`Renderer`](crate::Renderer) for.
#[derive(Clone, Debug)]
pub struct SurfaceChoice {
    /// Pass to `Surface::configure` (update `width` / `height` on resize).
    pub config: wgpu::SurfaceConfiguration,
    /// The format of the views to render into (`config.format`). Create frame views with
    /// [`SurfaceChoice::frame_view`].
    pub render_format: wgpu::TextureFormat,
}

impl SurfaceChoice {
    /// A view of a surface texture in [`SurfaceChoice::render_format`].
    #[must_use]
    pub fn frame_view(&self, texture: &wgpu::Texture) -> wgpu::TextureView {
        texture.create_view(&wgpu::TextureViewDescriptor {
            label: Some("memviz-render frame"),
            format: Some(self.render_format),
            ..wgpu::TextureViewDescriptor::default()
        })
    }
}

/// Chooses the format and configuration for a surface with capabilities `caps`, `width` ×
/// `height` device pixels (0 is raised to 1). `None` when the surface offers no format at all.
#[must_use]
pub fn surface_config(
    caps: &wgpu::SurfaceCapabilities,
    width: u32,
    height: u32,
) -> Option<SurfaceChoice> {
    use wgpu::TextureFormat as F;
    let is_8bit = |f: &F| {
        matches!(
            f,
            F::Rgba8Unorm | F::Bgra8Unorm | F::Rgba8UnormSrgb | F::Bgra8UnormSrgb
        )
    };
    let (format, render_format) = if let Some(plain) = caps
        .formats
        .iter()
        .copied()
        .find(|f| is_8bit(f) && !f.is_srgb())
    {
        (plain, plain)
    } else {
        let first = caps
            .formats
            .iter()
            .copied()
            .find(is_8bit)
            .or_else(|| caps.formats.first().copied())?;
        (first, first)
    };
    let present_mode = if caps.present_modes.contains(&wgpu::PresentMode::Fifo) {
        wgpu::PresentMode::Fifo
    } else {
        caps.present_modes
            .first()
            .copied()
            .unwrap_or(wgpu::PresentMode::Fifo)
    };
    let alpha_mode = if caps.alpha_modes.contains(&wgpu::CompositeAlphaMode::Opaque) {
        wgpu::CompositeAlphaMode::Opaque
    } else {
        wgpu::CompositeAlphaMode::Auto
    };
    Some(SurfaceChoice {
        config: wgpu::SurfaceConfiguration {
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            format,
            color_space: wgpu::SurfaceColorSpace::Auto,
            width: width.max(1),
            height: height.max(1),
            present_mode,
            desired_maximum_frame_latency: 2,
            alpha_mode,
            view_formats: Vec::new(),
        },
        render_format,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(formats: &[wgpu::TextureFormat]) -> wgpu::SurfaceCapabilities {
        wgpu::SurfaceCapabilities {
            formats: formats.to_vec(),
            present_modes: vec![wgpu::PresentMode::Fifo],
            alpha_modes: vec![wgpu::CompositeAlphaMode::Opaque],
            ..wgpu::SurfaceCapabilities::default()
        }
    }

    #[test]
    fn webgl2_like_takes_the_plain_format() {
        use wgpu::TextureFormat as F;
        let c = surface_config(&caps(&[F::Rgba8UnormSrgb, F::Rgba8Unorm]), 0, 10).expect("format");
        assert_eq!(c.config.format, F::Rgba8Unorm);
        assert_eq!(c.render_format, F::Rgba8Unorm);
        assert!(c.config.view_formats.is_empty());
        assert_eq!((c.config.width, c.config.height), (1, 10));
    }

    #[test]
    fn webgpu_like_renders_into_the_plain_format() {
        use wgpu::TextureFormat as F;
        let c = surface_config(&caps(&[F::Bgra8Unorm, F::Rgba8Unorm, F::Rgba16Float]), 8, 8)
            .expect("format");
        assert_eq!(c.config.format, F::Bgra8Unorm);
        assert_eq!(c.render_format, F::Bgra8Unorm);
        assert!(c.config.view_formats.is_empty());
    }

    #[test]
    fn srgb_only_surfaces_keep_their_srgb_format() {
        use wgpu::TextureFormat as F;
        let c = surface_config(&caps(&[F::Rgba16Float, F::Bgra8UnormSrgb]), 8, 8).expect("format");
        assert_eq!(c.config.format, F::Bgra8UnormSrgb);
        assert_eq!(c.render_format, F::Bgra8UnormSrgb);
    }

    #[test]
    fn no_formats_is_none() {
        assert!(surface_config(&caps(&[]), 8, 8).is_none());
    }
}
