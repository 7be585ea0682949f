//! Picking a surface format deliberately, so WebGPU and WebGL2 canvases show the same colours.
//!
//! # How it works
//! WebGL2 surfaces offer `Rgba8UnormSrgb`; WebGPU canvases only offer non-sRGB formats
//! (`bgra8unorm` / `rgba8unorm`) but accept their `-srgb` twin as a *view* format. So: take an
//! 8-bit sRGB format when the surface has one; otherwise configure the preferred 8-bit format
//! and add its sRGB twin to `view_formats`, and render through a view of that twin. Either way
//! the [`Renderer`](crate::Renderer) targets an sRGB format: instance colours (sRGB) are decoded
//! to linear in the shader, blended in linear light and re-encoded by the hardware, identically
//! on every backend.

/// A surface configuration plus the format to create frame views with and to build the
/// [`Renderer`](crate::Renderer) for.
#[derive(Clone, Debug)]
pub struct SurfaceChoice {
    /// Pass to `Surface::configure` (update `width` / `height` on resize).
    pub config: wgpu::SurfaceConfiguration,
    /// The format of the views to render into: `config.format` or its sRGB twin (which is then
    /// in `config.view_formats`). Create frame views with [`SurfaceChoice::frame_view`].
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
    let (format, render_format, view_formats) = if let Some(srgb) = caps
        .formats
        .iter()
        .copied()
        .find(|f| is_8bit(f) && f.is_srgb())
    {
        (srgb, srgb, Vec::new())
    } else if let Some(plain) = caps.formats.iter().copied().find(is_8bit) {
        let srgb = plain.add_srgb_suffix();
        (plain, srgb, vec![srgb])
    } else {
        let first = *caps.formats.first()?;
        (first, first, Vec::new())
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
            view_formats,
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
    fn webgl2_like_takes_the_srgb_format() {
        use wgpu::TextureFormat as F;
        let c = surface_config(&caps(&[F::Rgba8Unorm, F::Rgba8UnormSrgb]), 0, 10).expect("format");
        assert_eq!(c.config.format, F::Rgba8UnormSrgb);
        assert_eq!(c.render_format, F::Rgba8UnormSrgb);
        assert!(c.config.view_formats.is_empty());
        assert_eq!((c.config.width, c.config.height), (1, 10));
    }

    #[test]
    fn webgpu_like_renders_through_an_srgb_view() {
        use wgpu::TextureFormat as F;
        let c = surface_config(&caps(&[F::Bgra8Unorm, F::Rgba8Unorm, F::Rgba16Float]), 8, 8)
            .expect("format");
        assert_eq!(c.config.format, F::Bgra8Unorm);
        assert_eq!(c.render_format, F::Bgra8UnormSrgb);
        assert_eq!(c.config.view_formats, vec![F::Bgra8UnormSrgb]);
    }

    #[test]
    fn no_formats_is_none() {
        assert!(surface_config(&caps(&[]), 8, 8).is_none());
    }
}
